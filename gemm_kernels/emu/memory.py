"""Shared memory (one flat byte space per CTA) and tensor memory (128 lanes x 512 columns).

Shared memory is addressed as on the GPU: 32-bit shared-window addresses, with the CTA's rank in
the cluster from bit 24 up (what ``mapa`` and the H200 show). Kernels see typed numpy views of it;
their ordinary (generic-proxy) stores are recorded per byte with the writing thread until that
thread executes ``fence.proxy.async``, so a TMA store or an MMA that reads unfenced bytes is named.
"""
from __future__ import annotations

import numpy as np

from .errors import MemoryFault, MissingProxyFence, TmemLifecycleError

#: B200 per-block opt-in shared memory (PTX facts sheet, CUTLASS sm100_smem_capacity_bytes).
SMEM_CAPACITY = 232448
#: Offsets below this are never handed out, as on the GPU (the first 1 KiB is reserved).
SMEM_RESERVED = 0x400
RANK_SHIFT = 24
OFFSET_MASK = (1 << RANK_SHIFT) - 1

TMEM_LANES = 128
TMEM_COLS = 512


def _current_thread():
    from .context import current_thread

    return current_thread()


class SharedView(np.ndarray):
    """A typed view of a CTA's shared memory that records who wrote which bytes."""

    _smem = None
    _base = 0  # byte offset of element 0 in the CTA's shared memory

    def __array_finalize__(self, obj):
        if obj is not None:
            self._smem = getattr(obj, "_smem", None)
            parent = getattr(obj, "_base", 0)
            if self._smem is not None and obj is not None and isinstance(obj, np.ndarray):
                self._base = parent + (self.__array_interface__["data"][0] - obj.__array_interface__["data"][0])

    def __setitem__(self, key, value):
        np.ndarray.__setitem__(self, key, value)
        smem = self._smem
        if smem is None:
            return
        if isinstance(key, (int, np.integer)) and self.ndim == 1:
            lo = self._base + int(key) * self.strides[0]
            if key < 0:
                lo += self.shape[0] * self.strides[0]
            hi = lo + self.itemsize
        else:
            sub = np.ndarray.__getitem__(self, key)
            if isinstance(sub, np.ndarray):
                start = sub.__array_interface__["data"][0] - smem.buffer.__array_interface__["data"][0]
                lo, hi = start, start + max(sub.nbytes, sub.itemsize)
                if sub.size and not sub.flags.c_contiguous:
                    span = sum((n - 1) * abs(s) for n, s in zip(sub.shape, sub.strides))
                    hi = start + span + sub.itemsize
            else:
                idx = key if isinstance(key, tuple) else (key,)
                lo = self._base + sum(int(i) * s for i, s in zip(idx, self.strides))
                hi = lo + self.itemsize
        smem.generic_write(lo, hi)


class SharedMemory:
    def __init__(self, cta, dynamic_bytes):
        self.cta = cta
        self.size = SMEM_CAPACITY + SMEM_RESERVED
        self.buffer = np.zeros(self.size, dtype=np.uint8)
        self.dirty = np.zeros(self.size, dtype=np.int32)  # writer thread id + 1, until it fences
        self.dynamic_bytes = dynamic_bytes
        self.dynamic_base = None
        self.static_next = None
        self.statics = []
        self.names = {}  # offset -> (name, size) for reports

    def window_address(self, offset):
        return (self.cta.rank << RANK_SHIFT) | offset

    # -- carving -------------------------------------------------------------------------------
    def view(self, offset, nbytes, dtype, shape):
        raw = self.buffer[offset:offset + nbytes]
        v = raw.view(dtype).reshape(shape).view(SharedView)
        v._smem = self
        v._base = offset
        return v

    def dynamic(self, dtype, alignment):
        """``cuda.shared.array(0, dtype)``: every such array aliases the same dynamic bytes."""
        align = max(alignment or 16, 16)
        if self.dynamic_base is None:
            self.dynamic_base = -(-SMEM_RESERVED // align) * align
            self.static_next = self.dynamic_base + self.dynamic_bytes
        elif self.dynamic_base % align:
            raise MemoryFault(f"dynamic shared memory at 0x{self.dynamic_base:x} is not {align}-byte aligned")
        itemsize = np.dtype(dtype).itemsize
        return self.view(self.dynamic_base, self.dynamic_bytes - self.dynamic_bytes % itemsize, dtype,
                         (self.dynamic_bytes // itemsize,))

    def static(self, index, shape, dtype, alignment):
        """The index-th static ``cuda.shared.array`` of the kernel (the same for every thread)."""
        if index < len(self.statics):
            return self.statics[index]
        if self.static_next is None:
            self.dynamic_base = SMEM_RESERVED
            self.static_next = SMEM_RESERVED + self.dynamic_bytes
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        itemsize = np.dtype(dtype).itemsize
        nbytes = int(np.prod(shape)) * itemsize
        align = max(alignment or itemsize, itemsize)
        off = -(-self.static_next // align) * align
        if off + nbytes > self.size:
            raise MemoryFault(f"shared memory overflow: static array of {nbytes} B at 0x{off:x} exceeds "
                              f"{SMEM_CAPACITY} B per CTA")
        self.static_next = off + nbytes
        v = self.view(off, nbytes, dtype, shape)
        self.statics.append(v)
        return v

    # -- addresses -----------------------------------------------------------------------------
    def check(self, offset, nbytes, what):
        if offset < SMEM_RESERVED or offset + nbytes > self.size:
            raise MemoryFault(f"{what}: shared bytes [0x{offset:x}, 0x{offset + nbytes:x}) are outside "
                              f"this CTA's shared memory")

    def name_of(self, offset):
        best = None
        for start, (name, size) in self.names.items():
            if start <= offset < start + size:
                best = (name, start)
        if best is None:
            return f"smem 0x{offset:x}"
        name, start = best
        return f"{name}" if start == offset else f"{name}+0x{offset - start:x}"

    # -- proxy tracking --------------------------------------------------------------------------
    def generic_write(self, lo, hi):
        t = _current_thread()
        if t is not None:
            self.dirty[lo:hi] = t.tid + 1

    def async_write(self, lo, hi, data):
        self.buffer[lo:hi] = data
        self.dirty[lo:hi] = 0

    def async_write_scatter(self, addrs, data):
        self.buffer[addrs] = data
        self.dirty[addrs] = 0

    def fence_proxy_async(self, thread):
        d = self.dirty
        d[d == thread.tid + 1] = 0

    def check_fenced(self, lo, hi, reader):
        d = self.dirty[lo:hi]
        if d.any():
            i = int(np.flatnonzero(d)[0])
            writer = self.cta.threads[int(d[i]) - 1]
            raise MissingProxyFence(
                f"{reader} reads shared bytes [0x{lo:x}, 0x{hi:x}) ({self.name_of(lo)}) through the async "
                f"proxy, but {writer} wrote byte 0x{lo + i:x} with an ordinary store and did not execute "
                f"fence.proxy.async.shared::cta before the CTA barrier. Add the fence after the stores.")


class Tmem:
    """Tensor memory of one CTA and its column allocator (units of 32 columns)."""

    def __init__(self, cta):
        self.cta = cta
        self.cells = np.zeros((TMEM_LANES, TMEM_COLS), dtype=np.float32)
        self.owner = [None] * (TMEM_COLS // 32)  # allocation start per 32-column unit
        self.allocations = {}  # start column -> (ncols, warp)
        self.relinquished = False
        self.alloc_warp = None

    def free_block(self, ncols):
        units = ncols // 32
        for start in range(0, TMEM_COLS // 32, units):
            if all(o is None for o in self.owner[start:start + units]):
                return start * 32
        return None

    def allocate(self, ncols, warp):
        if ncols < 32 or ncols > 512 or ncols & (ncols - 1):
            raise TmemLifecycleError(f"tcgen05.alloc of {ncols} columns: must be a power of 2 in [32, 512]")
        if self.relinquished:
            raise TmemLifecycleError(f"tcgen05.alloc by {warp} after this CTA relinquished its allocation permit")
        col = self.free_block(ncols)
        if col is None:
            return None
        for u in range(col // 32, (col + ncols) // 32):
            self.owner[u] = col
        self.allocations[col] = (ncols, warp)
        return col

    def free(self, col, ncols, warp):
        if col not in self.allocations:
            raise TmemLifecycleError(f"tcgen05.dealloc by {warp} of column {col}, which is not the start of a "
                                     f"live allocation (live: {sorted(self.allocations)})")
        n, by = self.allocations[col]
        if n != ncols:
            raise TmemLifecycleError(f"tcgen05.dealloc by {warp} of {ncols} columns at column {col}, but "
                                     f"{n} were allocated there")
        if by.index != warp.index:
            raise TmemLifecycleError(f"TMEM columns {col}..{col + n - 1} allocated by {by} are freed by {warp}: "
                                     f"allocate and free from the same warp")
        del self.allocations[col]
        for u in range(col // 32, (col + n) // 32):
            self.owner[u] = None


class GlobalView(np.ndarray):
    """A kernel argument in global memory. Ordinary loads and stores through it charge the
    running thread's virtual clock (costmodel.GLOBAL_ACCESS_CYCLES per element, plus one memory
    latency at the start of a run of loads), so the copies of steps 1-3 take time on the
    emulator's timelines as they do on the chip."""

    def __getitem__(self, key):
        _charge(self, key, load=True)
        return np.ndarray.__getitem__(self, key)

    def __setitem__(self, key, value):
        _charge(self, key, load=False)
        np.ndarray.__setitem__(self, key, value)


def _charge(arr, key, load):
    t = _current_thread()
    if t is None:
        return
    from .costmodel import GLOBAL_ACCESS_CYCLES, GLOBAL_LATENCY_CYCLES

    n = 1
    if not (isinstance(key, tuple) and all(isinstance(k, (int, np.integer)) for k in key)) and not isinstance(
            key, (int, np.integer)):
        sub = np.ndarray.__getitem__(arr, key)
        n = sub.size if isinstance(sub, np.ndarray) else 1
    if t.global_start is None:
        t.global_start = t.clock
        if load:  # a thread waits for its loads' data, not for its stores to land
            t.clock += GLOBAL_LATENCY_CYCLES
    t.clock += GLOBAL_ACCESS_CYCLES * n
