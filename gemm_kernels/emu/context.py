"""Which emulated thread is running now (the scheduler runs one at a time)."""

_state = {"launch": None}


def set_launch(launch):
    _state["launch"] = launch


def current_launch():
    return _state["launch"]


def current_thread():
    launch = _state["launch"]
    if launch is None or launch.scheduler is None:
        return None
    return launch.scheduler.current


def thread():
    """The running emulated thread; raises outside an emulated kernel."""
    t = current_thread()
    if t is None:
        raise RuntimeError("this PTX operation's Python twin was called outside an emulated kernel; "
                           "run the kernel with gemm_kernels.emu.run(...)")
    return t
