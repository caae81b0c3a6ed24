"""Build a Numba-CUDA kernel down to Blackwell machine code on any machine, GPU or not.

Three stages, all in-process:

1. PTX: ``numba.cuda.compile_ptx(py_func, sig, cc=(10, 0, "a"))``. The ``"a"`` matters: plain
   ``cc=(10, 0)`` gives ``.target sm_100``, which ptxas rejects for every tcgen05 instruction.
2. cubin: nvJitLink through ``cuda.core.Linker`` (the system ptxas may be older than the PTX ISA
   version NVVM emits, so we never shell out to it). ``ObjectCode.from_ptx`` reads a ``str`` as a
   file path, hence the PTX is passed as bytes. ``verbose=True`` makes the linker write the resource
   report (registers, stack frame, spills, shared memory) into its info log, which we parse.
3. SASS: ``nvdisasm`` from the ``nvidia-cuda-nvdisasm`` wheel (or from PATH) on the cubin.

``build(kernel, sig)`` returns a frozen :class:`Build`; results are cached per process on
(function identity, signature, arch, options).

Register cap: ``numba.cuda.compile_ptx`` (numba-cuda 0.30.4) has no ``max_registers`` argument (only
``numba.cuda.jit`` has one, used when numba itself links). Since we link ourselves, ``max_registers``
is passed to the linker as ``LinkerOptions(max_register_count=N)`` (ptxas ``-maxrregcount``).
"""
from __future__ import annotations

import collections
import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass, field

__all__ = ["Build", "OpcodeCounter", "build", "find_nvdisasm", "parse_resource_log",
           "parse_sass_opcodes", "ARCH_CC"]

#: supported targets and the numba ``cc`` tuple that selects them
ARCH_CC = {
    "sm_100a": (10, 0, "a"),
    "sm_90a": (9, 0, "a"),
    "sm_100": (10, 0),
    "sm_90": (9, 0),
}


# --------------------------------------------------------------------------------------------
# nvdisasm
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def find_nvdisasm() -> str | None:
    """Path of ``nvdisasm``: first the one shipped in the ``nvidia-cuda-nvdisasm`` wheel
    (``site-packages/nvidia/cu13/bin`` or the older ``nvidia/cuda_nvdisasm/bin`` layout), then PATH,
    then ``$CUDA_HOME/bin``. None when there is none."""
    candidates = []
    try:
        import nvidia  # namespace package of the NVIDIA wheels

        for root in list(getattr(nvidia, "__path__", [])):
            candidates += sorted(glob.glob(os.path.join(root, "cu*", "bin", "nvdisasm")), reverse=True)
            candidates += glob.glob(os.path.join(root, "cuda_nvdisasm", "bin", "nvdisasm"))
    except ImportError:
        pass
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which("nvdisasm")
    if found:
        return found
    for env in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(env)
        if root and os.access(os.path.join(root, "bin", "nvdisasm"), os.X_OK):
            return os.path.join(root, "bin", "nvdisasm")
    return None


def disassemble(cubin: bytes, *, lineinfo: bool = False) -> str:
    """SASS text of a cubin (code sections only). Raises RuntimeError if nvdisasm is missing."""
    tool = find_nvdisasm()
    if tool is None:
        raise RuntimeError("nvdisasm not found: install the nvidia-cuda-nvdisasm wheel "
                           "(pip install nvidia-cuda-nvdisasm) or put the CUDA toolkit's bin on PATH")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        cmd = [tool, "-c"] + (["-g"] if lineinfo else []) + [path]
        res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"nvdisasm failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


# --------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------

# an instruction line: "/*00b0*/   @!P0 SYNCS.EXCH.64 URZ, [UR6], UR4 ;"
_SASS_LINE = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(?:\{\s*)?(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")


class OpcodeCounter(collections.Counter):
    """A Counter of full SASS opcodes (``"UTMALDG.2D"``, ``"SYNCS.EXCH.64"``).

    Looking up a key that was never counted as such sums the opcodes of which it is the base or a
    dotted prefix: ``c["UTMALDG"]`` counts ``UTMALDG.2D`` and ``UTMALDG.3D``; ``"UTMALDG" in c``
    likewise. An exact full opcode is looked up exactly.
    """

    def __missing__(self, key):
        pre = key + "."
        return sum(v for k, v in self.items() if k.startswith(pre))

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        pre = key + "."
        return any(k.startswith(pre) for k in self.keys())

    def base(self) -> collections.Counter:
        """Counts by base opcode (text before the first dot)."""
        out = collections.Counter()
        for k, v in self.items():
            out[k.split(".", 1)[0]] += v
        return out


def parse_sass_opcodes(sass: str) -> OpcodeCounter:
    """Count the opcodes (with modifiers) of every instruction line of nvdisasm output."""
    c = OpcodeCounter()
    for line in sass.splitlines():
        m = _SASS_LINE.match(line)
        if m:
            c[m.group(1)] += 1
    return c


def _ints(pattern: str, text: str) -> list[int]:
    return [int(x) for x in re.findall(pattern, text, flags=re.IGNORECASE)]


def parse_resource_log(log: str) -> dict:
    """Registers, stack frame, spills, shared and local memory from nvJitLink's verbose info log.

    The log holds ptxas's lines (``ptxas . 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill
    loads`` / ``Used 8 registers, used 0 barriers``) and the linker's summary (``used 8 registers, used
    4 barriers, 0 stack, 0 bytes smem, 0 bytes lmem``). With several functions in one module, the
    maximum over them is reported (a device function that was not inlined counts too).
    """
    def mx(pattern):
        vals = _ints(pattern, log)
        return max(vals) if vals else 0

    stack = max(mx(r"(\d+) bytes stack frame"), mx(r"(\d+) stack\b"))
    return {
        "registers": mx(r"used (\d+) registers"),
        "barriers": mx(r"used (\d+) barriers"),
        "shared_bytes": mx(r"(\d+) bytes smem"),
        "local_bytes": max(stack, mx(r"(\d+) bytes lmem")),
        "stack_bytes": stack,
        "spill_stores": mx(r"(\d+) bytes spill stores"),
        "spill_loads": mx(r"(\d+) bytes spill loads"),
    }


# --------------------------------------------------------------------------------------------
# the build
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Build:
    """One kernel built for one target: its PTX, cubin, SASS and resource report."""

    name: str                 # the kernel's (mangled) entry name
    arch: str
    signature: str
    ptx: str
    cubin: bytes = field(repr=False)
    sass: str = field(repr=False)
    registers: int
    shared_bytes: int         # static shared memory per block
    local_bytes: int          # local memory per thread (stack frame)
    spill_stores: int
    spill_loads: int
    barriers: int
    opcodes: OpcodeCounter = field(repr=False, compare=False)
    info_log: str = field(repr=False, compare=False)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads

    def count(self, prefix: str) -> int:
        """Number of SASS instructions whose full opcode text starts with ``prefix``
        (``count("UTMALDG")``, ``count("SYNCS.ARRIVE")``, ``count("UTCHMMA")``)."""
        return sum(v for k, v in self.opcodes.items() if k.startswith(prefix))

    def histogram(self, base: bool = True) -> collections.Counter:
        """Opcode counts: by base opcode (``UTMALDG``) or, with ``base=False``, by full opcode."""
        return self.opcodes.base() if base else collections.Counter(self.opcodes)

    def summary(self, *, base: bool = True, top: int | None = None) -> str:
        """Registers, static shared memory, local memory, spills and an opcode histogram."""
        short = self.name if len(self.name) <= 72 else self.name[:69] + "..."
        lines = [
            f"kernel          {short}",
            f"arch            {self.arch}",
            f"signature       {self.signature}",
            f"registers       {self.registers} per thread",
            f"static smem     {self.shared_bytes} bytes per block",
            f"local memory    {self.local_bytes} bytes per thread (stack frame)",
            f"spills          {self.spill_stores} bytes stores, {self.spill_loads} bytes loads",
            f"barriers        {self.barriers}",
        ]
        hist = self.histogram(base=base)
        total = sum(hist.values())
        lines.append(f"instructions    {total}")
        if hist:
            items = hist.most_common(top)
            width = max(len(k) for k, _ in items)
            width = max(width, len("opcode"))
            lines.append("")
            lines.append(f"{'opcode':<{width}}  {'count':>6}")
            lines.append(f"{'-' * width}  {'-' * 6}")
            for k, v in items:
                lines.append(f"{k:<{width}}  {v:>6}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _py_func(kernel):
    """The plain Python function behind a ``numba.cuda.jit`` dispatcher (or the function itself)."""
    f = getattr(kernel, "py_func", kernel)
    if not callable(f):
        raise TypeError(f"expected a Python function or a numba.cuda.jit dispatcher, got {kernel!r}")
    return f


def _sig_key(sig):
    if isinstance(sig, str):
        return sig.strip()
    if isinstance(sig, list):
        return tuple(sig)
    return sig


def _entry_name(ptx: str) -> str:
    m = re.search(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    return m.group(1) if m else "?"


def build(kernel, sig, *, arch: str = "sm_100a", lineinfo: bool = False,
          max_registers: int | None = None, fastmath: bool = False, debug: bool = False,
          launch_bounds=None) -> Build:
    """Compile ``kernel`` for ``sig`` to PTX, link to a cubin for ``arch`` and disassemble it.

    kernel: a Python function or a ``numba.cuda.jit`` dispatcher (its ``py_func`` is used).
    sig: a numba signature, e.g. ``"void(uint64, int32)"`` or a tuple of numba types.
    arch: ``"sm_100a"`` (default) or ``"sm_90a"`` (also plain ``"sm_100"`` / ``"sm_90"``).
    lineinfo: emit line info (and annotate the SASS with source lines).
    max_registers: register cap per thread, passed to the linker (ptxas ``-maxrregcount``).
    Needs no GPU, also for kernels that call ``cuda.jit(device=True)`` functions (they compile for
    ``arch``: see :func:`gemm_kernels.runtime.offline.target_device`). Cached per process.
    """
    if arch not in ARCH_CC:
        raise ValueError(f"unknown arch {arch!r}; expected one of {sorted(ARCH_CC)}")
    if launch_bounds is not None and not isinstance(launch_bounds, (int, tuple)):
        launch_bounds = tuple(launch_bounds)
    return _build_cached(_py_func(kernel), _sig_key(sig), arch,
                         (bool(lineinfo), max_registers, bool(fastmath), bool(debug), launch_bounds))


@functools.lru_cache(maxsize=256)
def _build_cached(py_func, sig, arch, extra) -> Build:
    from . import ensure_numpy_compat

    ensure_numpy_compat()
    from numba import cuda
    from cuda.core import Linker, LinkerOptions, ObjectCode

    lineinfo, max_registers, fastmath, debug, launch_bounds = extra
    kwargs = dict(cc=ARCH_CC[arch], lineinfo=lineinfo, fastmath=fastmath)
    if debug:
        kwargs.update(debug=True, opt=False)
    if launch_bounds is not None:
        kwargs["launch_bounds"] = launch_bounds
    from .offline import target_device

    with target_device(ARCH_CC[arch]):  # device functions compile for the target, GPU or not
        ptx, _resty = cuda.compile_ptx(py_func, sig, **kwargs)

    opts = dict(arch=arch, verbose=True)
    if max_registers is not None:
        opts["max_register_count"] = int(max_registers)
    if lineinfo:
        opts["lineinfo"] = True
    if debug:
        opts["debug"] = True
    linker = Linker(ObjectCode.from_ptx(ptx.encode()), options=LinkerOptions(**opts))
    cubin = linker.link("cubin").code
    log = linker.get_info_log() or ""
    if isinstance(log, bytes):
        log = log.decode(errors="replace")
    log = log.replace("\x00", "")
    cubin = bytes(cubin)

    try:
        sass = disassemble(cubin, lineinfo=lineinfo)
    except RuntimeError as e:
        warnings.warn(f"no SASS for {py_func.__qualname__}: {e}", RuntimeWarning, stacklevel=3)
        sass = ""

    res = parse_resource_log(log)
    return Build(
        name=_entry_name(ptx),
        arch=arch,
        signature=str(sig),
        ptx=ptx,
        cubin=cubin,
        sass=sass,
        registers=res["registers"],
        shared_bytes=res["shared_bytes"],
        local_bytes=res["local_bytes"],
        spill_stores=res["spill_stores"],
        spill_loads=res["spill_loads"],
        barriers=res["barriers"],
        opcodes=parse_sass_opcodes(sass),
        info_log=log,
    )


def clear_cache() -> None:
    """Forget every cached build (after editing a kernel in a notebook, say)."""
    _build_cached.cache_clear()
