"""Instrumented builds of a kernel: on-chip timelines and the hang guard, without editing the kernel.

An instrumented build is a *copy* of a ``numba.cuda.jit`` kernel whose globals (and closure cells)
are rebound, as the emulator rebinds them (``gemm_kernels.emu.rebind``), but for the GPU: the name
``ptx`` becomes a copy of ``gemm_kernels.ptx`` in which a few operations are replaced by wrappers,
and every device function the kernel calls is copied the same way, recursively. The kernel module is
never edited and nothing process-wide changes; the plain kernel stays what it was.

    from gemm_kernels.instrument import instrument, Timeline, Guard
    k_off = instrument(kernel)                          # the same machine code (tests compare the bytes)
    k_tl = instrument(kernel, timeline=Timeline(addr))  # %globaltimer stamps at the emulator's events
    k_gd = instrument(kernel, guard=Guard(ctr, rec))    # every mbarrier wait gives up, records, traps

**Timeline** (``timeline=``): the lowest active lane of each warp stamps ``%globaltimer`` with an
event code into a device buffer (``ptx.timeline_stamp``) at the events the emulator traces:

============================  =================================  =======================================
op in the kernel              stamp(s)                           drawn as (``decode_timeline``)
============================  =================================  =======================================
mbarrier_wait(_(relaxed_)cluster) WAIT_BEGIN, WAIT_END (bar, parity)  ``wait`` from begin to end
tma_load_2d(_cg2)             TMA_LOAD (barrier)                  ``tma.issue`` tick; ``tma.load`` bar on
                                                                  lane TMA until a wait on that barrier
                                                                  is released (observed landing)
tcgen05_mma(_cg2)             MMA                                 ``mma`` bar on lane "tensor core": first
                                                                  MMA after a commit .. release of a wait
                                                                  on the commit's barrier
tcgen05_commit(...)           COMMIT (barrier)                    ``commit`` tick
mbarrier_arrive*(...)         ARRIVE (barrier)                    ``arrive`` tick
tma_store_2d                  TMA_STORE                           ``tma.issue`` tick (detail "store")
tmem_ld_* .. tmem_wait_ld     TMEM_LD, TMEM_LD_END                ``tmem.ld`` bar (a writeback chunk)
set_warp_role(code)           ROLE (code)                         names the warp's lane, as on the emulator
shared_addr(arr)              (writes the base to the header)     barrier names from the SmemPlan
============================  =================================  =======================================

The times are the GPU's ``%globaltimer`` (nanoseconds; its update interval is coarse on some GPUs:
``decode_timeline`` reports the smallest non-zero step it saw).

**Hang guard** (``guard=``): ``mbarrier_wait`` / ``mbarrier_wait_cluster`` become
``ptx.guard_wait(_cluster)``: a try_wait loop with a ``%globaltimer`` deadline. On giving up, one lane
per stuck warp writes (CTA, thread, barrier address, parity, elapsed, SM, raw barrier word) into
mapped, pinned HOST memory, waits a grace period so the other stuck warps can record too, and
traps. ``launch_guarded`` launches, and when the launch fails reads the records (host memory stays
readable after the trap has poisoned the context) and raises
:class:`gemm_kernels.emu.errors.Deadlock`, the emulator's own type, naming each barrier by its
``SmemPlan`` region.

How a chapter kernel adopts it: it does not have to change at all; ``instrument(CHAPTERS[n].kernel,
...)`` rebinds its ``ptx`` and its device functions. What a chapter's host code needs is a launch
with the instrumented kernel in place of the plain one (``bench.capture_launch`` gives the launch
arguments of any chapter without editing it).
"""
from __future__ import annotations

import struct
import types as pytypes
from dataclasses import dataclass, field

import numpy as np

from .ptx import probe
from .rebinding import FunctionRebinder
from .rebinding import is_dispatcher as _is_dispatcher

__all__ = ["Timeline", "Guard", "instrument", "decode_timeline", "GuardRecord", "decode_guard", "guard_message",
           "raise_if_guarded", "launch_guarded", "launch_traced", "text_bytes", "EVENTS",
           "TimelineBuffer", "GuardBuffer"]

# -- event codes ----------------------------------------------------------------------------------

WAIT_BEGIN, WAIT_END, TMA_LOAD, MMA, COMMIT, ARRIVE, TMA_STORE, TMEM_LD, TMEM_LD_END, ROLE = range(1, 11)
EVENTS = {WAIT_BEGIN: "wait begin", WAIT_END: "wait end", TMA_LOAD: "tma load issue", MMA: "mma issue",
          COMMIT: "commit", ARRIVE: "arrive", TMA_STORE: "tma store issue", TMEM_LD: "tmem.ld",
          TMEM_LD_END: "tmem.ld waited", ROLE: "warp role"}
PARITY_BIT = 1 << 31

STAMP_DTYPE = np.dtype([("t", "<u8"), ("code", "<u4"), ("arg", "<u4"), ("cta_x", "<u4"), ("tid", "<u4"),
                        ("sm", "<u4"), ("cta_y", "<u4")])
GUARD_DTYPE = np.dtype([("magic", "<u4"), ("cta_x", "<u4"), ("cta_y", "<u4"), ("cta_z", "<u4"), ("tid", "<u4"),
                        ("rank", "<u4"), ("bar", "<u4"), ("parity", "<u4"), ("done", "<u4"), ("sm", "<u4"),
                        ("elapsed_ns", "<u8"), ("state", "<u8"), ("t_ns", "<u8")])
assert STAMP_DTYPE.itemsize == probe.STAMP_RECORD_BYTES and GUARD_DTYPE.itemsize == probe.GUARD_RECORD_BYTES


@dataclass(frozen=True)
class Timeline:
    """Where stamps go: a device buffer of ``probe.HEADER_BYTES + capacity * 32`` bytes (zeroed)."""

    address: int
    capacity: int = 1 << 16


@dataclass(frozen=True)
class Guard:
    """counter: device address of a zeroed u32; records: device pointer of mapped host memory of
    ``probe.HEADER_BYTES + slots * 64`` bytes (zeroed). limit_ns: how long a wait may take."""

    counter: int
    records: int
    limit_ns: int = 1_000_000_000
    grace_ns: int = 100_000_000
    slots: int = 64


# -- rebinding ------------------------------------------------------------------------------------

_JIT_OPTIONS = ("device", "inline", "forceinline", "link", "debug", "opt", "lineinfo", "fastmath",
                "launch_bounds", "lto")


def _jit_like(dispatcher, fn):
    from numba import cuda

    opts = {k: v for k, v in dispatcher.targetoptions.items() if k in _JIT_OPTIONS}
    return cuda.jit(**opts)(fn)


class _Rebinder(FunctionRebinder):
    """Copies functions with ``ptx`` (and ops imported by name) replaced per ``subs``."""

    def __init__(self, subs):
        super().__init__()
        from . import ptx as ptx_module
        from numba.cuda.extending import _Intrinsic

        self._Intrinsic = _Intrinsic
        self.ptx = ptx_module
        self.ptx_copy = pytypes.ModuleType(ptx_module.__name__)
        self.ptx_copy.__dict__.update(ptx_module.__dict__)
        self.by_id = {}
        for name, repl in subs.items():
            self.by_id[id(getattr(ptx_module, name))] = repl
            setattr(self.ptx_copy, name, repl)
        self.dispatchers = {}
        self.modules = {}

    def value(self, v):
        if v is self.ptx:
            return self.ptx_copy
        if isinstance(v, self._Intrinsic):
            return self.by_id.get(id(v), v)
        if _is_dispatcher(v):
            return self.dispatcher(v)
        if isinstance(v, pytypes.ModuleType) and v.__name__.startswith("gemm_kernels."):
            return self.module(v)
        return v

    def module(self, mod):
        hit = self.modules.get(id(mod))
        if hit is None:
            hit = pytypes.ModuleType(mod.__name__)
            self.modules[id(mod)] = hit
            for k, v in mod.__dict__.items():
                setattr(hit, k, self.value(v) if (_is_dispatcher(v) or v is self.ptx) else v)
        return hit

    def dispatcher(self, d):
        hit = self.dispatchers.get(id(d))
        if hit is None:
            hit = _jit_like(d, self.function(d.py_func))
            self.dispatchers[id(d)] = hit
        return hit


# -- wrappers -------------------------------------------------------------------------------------

def _device(src, name, ns):
    from numba import cuda

    exec(src, ns)  # noqa: S102 - wrappers with the op's exact parameter list (numba wants no *args)
    return cuda.jit(device=True, forceinline=True)(ns[name])


def _timeline_subs(tl: Timeline, guard: Guard | None):
    from . import ptx

    base = dict(_stamp=probe.timeline_stamp, _BUF=int(tl.address), _CAP=int(tl.capacity), _PB=PARITY_BIT)
    subs = {}

    def wrap(name, params, before=None, after=None, call=None, returns=False):
        ns = dict(base, _op=getattr(ptx, name))
        call = call or f"_op({params})"
        lines = [f"def w_{name}({params}):"]
        if before:
            lines.append(f"    _stamp(_BUF, _CAP, {before[0]}, {before[1]})")
        lines.append(f"    r = {call}")
        if after:
            lines.append(f"    _stamp(_BUF, _CAP, {after[0]}, {after[1]})")
        lines.append("    return r" if returns else "    return")
        if guard is not None:
            ns.update(_gw=probe.guard_wait, _gwc=probe.guard_wait_cluster, _CTR=int(guard.counter),
                      _REC=int(guard.records), _LIM=int(guard.limit_ns), _GR=int(guard.grace_ns),
                      _SL=int(guard.slots))
        subs[name] = _device("\n".join(lines) + "\n", f"w_{name}", ns)

    gcall = "_gw(bar, parity, _CTR, _REC, _LIM, _GR, _SL)"
    gcall_cluster = gcall.replace("_gw(", "_gwc(")
    for name, g in (("mbarrier_wait", gcall), ("mbarrier_wait_cluster", gcall_cluster),
                    ("mbarrier_wait_relaxed_cluster", gcall_cluster)):
        arg = "bar | (parity << 31)"
        wrap(name, "bar, parity", (WAIT_BEGIN, arg), (WAIT_END, arg), call=g if guard is not None else None)
    for name in ("tma_load_2d", "tma_load_2d_cg2"):
        wrap(name, "dst, tmap, c0, c1, bar", (TMA_LOAD, "bar"))
    for name in ("tcgen05_mma", "tcgen05_mma_cg2"):
        wrap(name, "d_tmem, a_desc, b_desc, idesc, accumulate", (MMA, "accumulate"))
    wrap("tcgen05_commit", "bar", (COMMIT, "bar"))
    wrap("tcgen05_commit_cg2_multicast", "bar, mask", (COMMIT, "bar"))
    for name in ("mbarrier_arrive", "mbarrier_arrive_cluster"):
        wrap(name, "bar", (ARRIVE, "bar"))
    wrap("mbarrier_arrive_expect_tx", "bar, nbytes", (ARRIVE, "bar"))
    wrap("tma_store_2d", "tmap, c0, c1, src", (TMA_STORE, "src"))
    for width in (8, 16, 32, 64):
        wrap(f"tmem_ld_32x32b_x{width}", "taddr", (TMEM_LD, "taddr"), returns=True)
    wrap("tmem_wait_ld", "", None, (TMEM_LD_END, 0))
    wrap("set_warp_role", "code", (ROLE, "code"))
    ns = dict(_op=ptx.shared_addr, _note=probe.guard_note_base, _BUF=int(tl.address))
    body = "def w_shared_addr(arr):\n    r = _op(arr)\n    _note(_BUF, r)\n"
    if guard is not None:
        ns["_REC"] = int(guard.records)
        body += "    _note(_REC, r)\n"
    subs["shared_addr"] = _device(body + "    return r\n", "w_shared_addr", ns)
    return subs


def _guard_subs(guard: Guard):
    from . import ptx

    ns = dict(_gw=probe.guard_wait, _gwc=probe.guard_wait_cluster, _CTR=int(guard.counter),
              _REC=int(guard.records), _LIM=int(guard.limit_ns), _GR=int(guard.grace_ns), _SL=int(guard.slots),
              _op=ptx.shared_addr, _note=probe.guard_note_base)
    return {
        "mbarrier_wait": _device("def w(bar, parity):\n    _gw(bar, parity, _CTR, _REC, _LIM, _GR, _SL)\n",
                                 "w", dict(ns)),
        "mbarrier_wait_cluster": _device("def w(bar, parity):\n    _gwc(bar, parity, _CTR, _REC, _LIM, _GR, _SL)\n",
                                         "w", dict(ns)),
        "mbarrier_wait_relaxed_cluster": _device(
            "def w(bar, parity):\n    _gwc(bar, parity, _CTR, _REC, _LIM, _GR, _SL)\n", "w", dict(ns)),
        "shared_addr": _device("def w(arr):\n    r = _op(arr)\n    _note(_REC, r)\n    return r\n", "w", dict(ns)),
    }


def instrument(kernel, *, timeline: Timeline | None = None, guard: Guard | None = None):
    """A new ``cuda.jit`` kernel: ``kernel`` with the timeline and/or guard hooks, or (neither given)
    an uninstrumented copy made the same way, whose machine code equals the plain kernel's."""
    if not _is_dispatcher(kernel):
        raise TypeError(f"instrument() wants a numba.cuda.jit kernel, got {kernel!r}")
    if timeline is not None:
        subs = _timeline_subs(timeline, guard)
    elif guard is not None:
        subs = _guard_subs(guard)
    else:
        subs = {}
    rb = _Rebinder(subs)
    out = _jit_like(kernel, rb.function(kernel.py_func))
    out.instrumented = dict(timeline=timeline, guard=guard, base=kernel)
    return out


# -- machine code comparison ------------------------------------------------------------------------

def text_bytes(cubin: bytes) -> dict:
    """{section name: bytes} of the ``.text.*`` (machine code) sections of an ELF64 cubin."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not an ELF64 cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    stroff = secs[shstrndx][4]

    def name(off):
        end = cubin.index(b"\x00", stroff + off)
        return cubin[stroff + off:end].decode()

    return {name(s[0]): cubin[s[4]:s[4] + s[5]] for s in secs if name(s[0]).startswith(".text.")}


# -- decoding a timeline ----------------------------------------------------------------------------

def _dptr(arr) -> int:
    """Device address of a numba device / mapped array."""
    return int(arr.__cuda_array_interface__["data"][0])


class TimelineBuffer:
    """A zeroed device buffer for ``capacity`` stamps (numba device array)."""

    def __init__(self, capacity=1 << 16):
        from numba import cuda

        self.capacity = int(capacity)
        self.device = cuda.to_device(np.zeros(probe.HEADER_BYTES + probe.STAMP_RECORD_BYTES * self.capacity, np.uint8))
        self.options = Timeline(_dptr(self.device), self.capacity)

    def reset(self):
        self.device.copy_to_device(np.zeros(self.device.shape, np.uint8))

    def read(self) -> np.ndarray:
        return self.device.copy_to_host()


def region_name(offset, regions):
    """The SmemPlan region ``(name, off, size)`` holding ``offset``, as "name" or "name+0xNN"."""
    for name, off, size in regions:
        if off <= offset < off + size:
            return name if offset == off else f"{name}+{offset - off:#x}"
    return f"smem +{offset:#x}"


def _raw_records(raw, dtype):
    raw = np.frombuffer(np.ascontiguousarray(raw).view(np.uint8).tobytes(), np.uint8)
    count, base = struct.unpack_from("<II", raw, 0)
    body = raw[probe.HEADER_BYTES:]
    cap = len(body) // dtype.itemsize
    recs = np.frombuffer(body[:cap * dtype.itemsize].tobytes(), dtype)
    return count, base, recs


def decode_timeline(raw, *, regions=(), grid_x=None, source="GPU %globaltimer (measured)"):
    """A :class:`gemm_kernels.trace.Trace` from a timeline buffer (bytes or a uint8 array).

    ``regions``: the kernel's ``SmemPlan.regions`` (barrier names). ``grid_x``: gridDim.x, to number
    CTAs as the emulator does (x + y * grid_x); default: the largest x seen + 1. The trace gets
    ``.dropped`` (stamps past the capacity) and ``.timer_step_ns`` (smallest non-zero step seen)."""
    from .trace import ROLES, Trace

    count, base, recs = _raw_records(raw, STAMP_DTYPE)
    n = min(count, len(recs))
    recs = recs[:n]
    trace = Trace(source=source)
    trace.dropped = max(0, count - len(recs))
    if n == 0:
        trace.timer_step_ns = None
        return trace
    ts = np.unique(recs["t"])
    steps = np.diff(ts)
    trace.timer_step_ns = int(steps[steps > 0].min()) if (steps > 0).any() else None
    gx = grid_x or int(recs["cta_x"].max()) + 1
    order = np.argsort(recs["t"], kind="stable")
    t0 = int(recs["t"].min())
    ctas = {int(r["cta_x"]) + gx * int(r["cta_y"]) for r in recs}
    multi = len(ctas) > 1
    roles = {}
    for r in recs:
        if r["code"] == ROLE:
            roles[(int(r["cta_x"]) + gx * int(r["cta_y"]), int(r["tid"]) // 32)] = ROLES.get(int(r["arg"]),
                                                                                           f"role {int(r['arg'])}")

    def lane_of(cta, warp):
        name = roles.get((cta, warp), f"warp {warp}")
        return f"CTA {cta} {name}" if multi else name

    def unit(cta, what):
        return f"CTA {cta} {what}" if multi else what

    def bar_name(addr):
        return region_name((addr & 0xFFFFFF) - base, regions) if base else f"smem {addr:#x}"

    open_wait, open_ld, releases, pending_tma, pending_mma = {}, {}, [], [], {}
    mma_groups = []
    for i in order:
        r = recs[i]
        t = float(int(r["t"]) - t0)
        cta = int(r["cta_x"]) + gx * int(r["cta_y"])
        warp = int(r["tid"]) // 32
        code, arg = int(r["code"]), int(r["arg"])
        lane = lane_of(cta, warp)
        key = (cta, warp)
        if code == WAIT_BEGIN:
            open_wait[key] = (t, arg)
        elif code == WAIT_END:
            start, a0 = open_wait.pop(key, (t, arg))
            bar = a0 & ~PARITY_BIT
            trace.add(lane=lane, op="wait", start=start, end=t, cta=cta, warp=warp, barrier=bar_name(bar),
                      extra={"parity": a0 >> 31})
            releases.append((t, cta, bar))
        elif code == TMA_LOAD:
            trace.add(lane=lane, op="tma.issue", start=t, end=t, cta=cta, warp=warp, barrier=bar_name(arg))
            pending_tma.append((t, cta, arg))
        elif code == TMA_STORE:
            trace.add(lane=lane, op="tma.issue", start=t, end=t, cta=cta, warp=warp, detail="store")
        elif code == MMA:
            pending_mma.setdefault(key, []).append(t)
        elif code == COMMIT:
            trace.add(lane=lane, op="commit", start=t, end=t, cta=cta, warp=warp, barrier=bar_name(arg))
            issued = pending_mma.pop(key, [])
            if issued:
                mma_groups.append((issued[0], t, cta, arg, len(issued)))
        elif code == ARRIVE:
            trace.add(lane=lane, op="arrive", start=t, end=t, cta=cta, warp=warp, barrier=bar_name(arg))
        elif code == TMEM_LD:
            open_ld.setdefault(key, t)
        elif code == TMEM_LD_END:
            start = open_ld.pop(key, t)
            trace.add(lane=lane, op="tmem.ld", start=start, end=t, cta=cta, warp=warp)
    releases.sort()

    def released(after, cta, bar):
        for t, c, b in releases:
            if t >= after and c == cta and (b & 0xFFFFFF) == (bar & 0xFFFFFF):
                return t
        return None

    for t, cta, bar in pending_tma:  # the load has landed by the time a wait on its barrier is released
        end = released(t, cta, bar)
        if end is not None:
            trace.add(lane=unit(cta, "TMA"), op="tma.load", start=t, end=end, cta=cta, barrier=bar_name(bar),
                      detail="issue .. observed landing (an upper bound)")
    for first, commit_t, cta, bar, count in mma_groups:
        end = released(commit_t, cta, bar)
        if end is not None:
            trace.add(lane=unit(cta, "tensor core"), op="mma", start=first, end=end, cta=cta, barrier=bar_name(bar),
                      detail=f"{count} MMAs: first issue .. observed commit (an upper bound)")
    return trace


# -- the hang guard ---------------------------------------------------------------------------------

class GuardBuffer:
    """The guard's two buffers: a device u32 counter and mapped, pinned host memory for records."""

    def __init__(self, slots=64, limit_ns=1_000_000_000, grace_ns=100_000_000):
        from numba import cuda

        self.counter = cuda.to_device(np.zeros(4, np.uint32))
        self.host = cuda.mapped_array(probe.HEADER_BYTES + probe.GUARD_RECORD_BYTES * slots, np.uint8)
        np.asarray(self.host)[:] = 0
        self.options = Guard(_dptr(self.counter), _dptr(self.host), int(limit_ns), int(grace_ns),
                             int(slots))

        self._kernels = {}

    def kernel_for(self, kernel):
        """``kernel`` instrumented with this buffer's guard (made once per kernel)."""
        k = self._kernels.get(id(kernel))
        if k is None:
            k = self._kernels[id(kernel)] = instrument(kernel, guard=self.options)
        return k

    def read(self) -> bytes:
        return bytes(np.asarray(self.host).tobytes())


@dataclass
class GuardRecord:
    cta: tuple
    rank: int
    thread: int
    barrier_address: int
    barrier: str
    parity: int
    completed: int  # test_wait(parity) when it gave up (0: the phase had not completed)
    sm: int
    elapsed_ns: int
    state: int  # an ordinary load of the mbarrier's 8 bytes (undocumented; read 0 on an H200: not shown)
    extra: dict = field(default_factory=dict)

    @property
    def warp(self):
        return self.thread // 32


def decode_guard(raw, *, regions=()) -> list:
    """The filled records of a guard buffer (bytes), barriers named by ``regions`` (SmemPlan)."""
    _, base, recs = _raw_records(raw, GUARD_DTYPE)
    out = []
    for r in recs:
        if int(r["magic"]) != probe.GUARD_MAGIC:
            continue
        addr = int(r["bar"])
        name = region_name((addr & 0xFFFFFF) - base, regions) if base else f"smem {addr:#x}"
        out.append(GuardRecord(cta=(int(r["cta_x"]), int(r["cta_y"]), int(r["cta_z"])), rank=int(r["rank"]),
                               thread=int(r["tid"]), barrier_address=addr, barrier=name, parity=int(r["parity"]),
                               completed=int(r["done"]), sm=int(r["sm"]), elapsed_ns=int(r["elapsed_ns"]),
                               state=int(r["state"]), extra={"base": base}))
    return out


def guard_message(records, *, kernel="kernel", limit_ns=None) -> str:
    """The Deadlock text: one line per stuck warp, worded like the emulator's deadlock report."""
    lim = f" (limit {limit_ns / 1e6:.0f} ms)" if limit_ns else ""
    lines = [f"hang guard: {kernel} stopped after a bounded mbarrier wait gave up{lim}; "
             f"{len(records)} warp(s) recorded where they were stuck:"]
    for r in sorted(records, key=lambda r: (r.cta, r.thread)):
        cta = ",".join(str(c) for c in r.cta)
        lines.append(f"  CTA ({cta}) rank {r.rank}: warp {r.warp} (thread {r.thread}, SM {r.sm}) waited "
                     f"{r.elapsed_ns / 1e6:.1f} ms on {r.barrier} (shared {r.barrier_address:#x}) for parity "
                     f"{r.parity}; that phase had {'completed late' if r.completed else 'not completed'}")
    lines.append("  The kernel trapped; this CUDA context is unusable (restart the process). Run the same "
                 "kernel on the emulator (backend='emulator') for who could arrive and why not.")
    return "\n".join(lines)


def raise_if_guarded(raw, *, regions=(), kernel="kernel", limit_ns=None, cause=None):
    """Raise ``Deadlock`` if the guard buffer holds records; else return None."""
    from .emu.errors import Deadlock

    records = decode_guard(raw, regions=regions)
    if records:
        err = Deadlock(guard_message(records, kernel=kernel, limit_ns=limit_ns))
        err.records = records
        raise err from cause


def launch_guarded(kernel, grid, block, args, *, regions=(), shared_bytes=0, cluster=(1, 1, 1),
                   limit_ns=1_000_000_000, grace_ns=100_000_000, slots=64, buffer=None):
    """Launch an instrumented-with-guard copy of ``kernel`` and wait for it. A hang becomes a
    :class:`Deadlock` after about ``limit_ns + grace_ns``; other launch errors are re-raised.
    ``buffer``: a GuardBuffer to reuse (its instrumented copy of ``kernel`` is compiled once)."""
    from numba import cuda

    from .runtime.launch import launch

    buf = buffer or GuardBuffer(slots, limit_ns, grace_ns)
    k = buf.kernel_for(kernel)
    name = getattr(kernel, "__name__", None) or kernel.py_func.__name__
    try:
        launch(k, grid, block, args, cluster=cluster, shared_bytes=shared_bytes)
        cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a trap surfaces as a CUDA error of some kind
        raise_if_guarded(buf.read(), regions=regions, kernel=name, limit_ns=buf.options.limit_ns, cause=e)
        raise
    raise_if_guarded(buf.read(), regions=regions, kernel=name, limit_ns=buf.options.limit_ns)
    return buf


def launch_traced(kernel, grid, block, args, *, regions=(), shared_bytes=0, cluster=(1, 1, 1), capacity=1 << 16,
                  guard=None):
    """Launch a timeline-instrumented copy of ``kernel``; return its Trace (GPU %globaltimer)."""
    from numba import cuda

    from .runtime.launch import launch

    buf = TimelineBuffer(capacity)
    k = instrument(kernel, timeline=buf.options, guard=guard)
    launch(k, grid, block, args, cluster=cluster, shared_bytes=shared_bytes)
    cuda.synchronize()
    gx = grid[0] if isinstance(grid, tuple) else int(grid)
    return decode_timeline(buf.read(), regions=regions, grid_x=gx)
