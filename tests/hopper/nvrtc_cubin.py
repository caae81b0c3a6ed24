"""CUDA C source -> cubin with NVRTC, for the standalone H200 scripts (tests/hopper/sanitizer_h200.py,
tests/fake_gpu/record_h200.py). They import it with tests/hopper on sys.path, so it imports nothing of the project."""
from __future__ import annotations


def compile_cubin(source: bytes, filename: bytes, arch: str) -> bytes:
    """Compile ``source`` for ``arch`` (e.g. "sm_90a"); raise with NVRTC's log if it fails."""
    from cuda.bindings import nvrtc

    _, prog = nvrtc.nvrtcCreateProgram(source, filename, 0, [], [])
    (err,) = nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture={arch}".encode()])
    if int(err) != 0:
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(log.decode())
    _, n = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = b" " * n
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    return cubin

