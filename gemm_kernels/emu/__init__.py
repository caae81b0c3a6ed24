"""The Blackwell emulator: runs a chapter's kernel source, unchanged, on the CPU.

``run(kernel, grid, block, args, ...)`` is the entry point; see ``launch.run``."""
from .errors import *  # noqa: F401,F403
from .launch import on_sms, run  # noqa: F401
from .tma import TensorMapModel  # noqa: F401
