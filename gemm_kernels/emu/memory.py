"""Shared memory (one flat byte space per CTA) and tensor memory (128 lanes x 512 columns).

Shared memory is addressed as on the GPU: 32-bit shared-window addresses, with the CTA's rank in
the cluster from bit 24 up (what ``mapa`` and the H200 show). Kernels see typed numpy views of it;
their ordinary (generic-proxy) stores are recorded per byte with the writing thread until that
thread executes ``fence.proxy.async``, so a TMA store or an MMA that reads unfenced bytes is named.

Both memories start poisoned, as on the chip where they hold whatever was there before: shared bytes
are 0xFF and TMEM cells NaN, and a shadow records what was written, so a read of never-written bytes
is an ``UninitializedRead`` instead of a lucky zero. Shared memory is only as large as the launch's
dynamic size; each live mbarrier owns its 8 bytes.
"""
from __future__ import annotations

import numpy as np

from . import relaxed as relaxed_rule
from . import source as _source
from .context import current_thread as _current_thread
from .costmodel import of
from .errors import (
    DataRace,
    MemoryFault,
    MissingProxyFence,
    SharedMemoryHazard,
    TmemLifecycleError,
    UninitializedRead,
)
from .hb import first_unordered

#: B200 per-block opt-in shared memory (PTX facts sheet, CUTLASS sm100_smem_capacity_bytes).
SMEM_CAPACITY = 232448
#: Offsets below this are never handed out, as on the GPU (the first 1 KiB is reserved).
SMEM_RESERVED = 0x400
RANK_SHIFT = 24
OFFSET_MASK = (1 << RANK_SHIFT) - 1

TMEM_LANES = 128
TMEM_COLS = 512


def _scalar_key(view, key):
    """Byte offset (in the CTA's shared memory) of the element that ``key`` names, if it names one
    element; None for a slice (which makes a view, not an access)."""
    if isinstance(key, (int, np.integer)):
        if view.ndim != 1:
            return None
        idx = (key,)
    elif isinstance(key, tuple) and len(key) == view.ndim and all(isinstance(k, (int, np.integer)) for k in key):
        idx = key
    else:
        return None
    off = view._base
    for i, n, s in zip(idx, view.shape, view.strides):
        if i < 0 or i >= n:
            return OUT_OF_BOUNDS
        off += int(i) * s
    return off


OUT_OF_BOUNDS = -1  # (valid offsets are >= SMEM_RESERVED)


class SharedView(np.ndarray):
    """A typed view of a CTA's shared memory. Element reads and writes go through the CTA's shadow
    memory (initialisation, barriers, regions, happens-before); an index outside the view is a
    MemoryFault naming the region and the launch's size, not a numpy IndexError."""

    _smem = None
    _base = 0  # byte offset of element 0 in the CTA's shared memory

    def __array_finalize__(self, obj):
        if obj is not None:
            self._smem = getattr(obj, "_smem", None)
            parent = getattr(obj, "_base", 0)
            if self._smem is not None and obj is not None and isinstance(obj, np.ndarray):
                self._base = parent + (self.__array_interface__["data"][0] - obj.__array_interface__["data"][0])

    def __getitem__(self, key):
        smem = self._smem
        if smem is not None:
            if type(key) is int and self.ndim == 1 and 0 <= key < self.shape[0]:  # the common case, fast
                n = self.itemsize
                off = self._base + key * n
                t = _current_thread()
                if t is not None:
                    clock = t.warp.clock
                    slot = clock.slot
                    rw = smem._rw
                    # (inlined from touch: this warp already read these bytes in this epoch)
                    if not (rw[off] == slot and rw[off + n - 1] == slot and smem._rep[off] == clock.vcm[slot]):
                        smem.touch(off, off + n, False, thread=t)
                return np.ndarray.__getitem__(self, key)
            off = _scalar_key(self, key)
            if off is not None:
                if off < 0:
                    smem.bounds_fault(self, key, "read")
                smem.touch(off, off + self.itemsize, False)
        try:
            return np.ndarray.__getitem__(self, key)
        except IndexError:
            smem.bounds_fault(self, key, "read")

    def __setitem__(self, key, value):
        smem = self._smem
        if smem is None:
            return np.ndarray.__setitem__(self, key, value)
        off = _scalar_key(self, key)
        if off is not None:
            if off < 0:
                smem.bounds_fault(self, key, "write")
            lo, hi = off, off + self.itemsize
        else:
            try:
                sub = np.ndarray.__getitem__(self, key)
            except IndexError:
                smem.bounds_fault(self, key, "write")
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
        smem.touch(lo, hi, True, _site(1))
        np.ndarray.__setitem__(self, key, value)


def _site(depth):
    return _source.site(depth + 1)


#: what fresh shared memory holds (0xFF bytes: NaN as fp16/fp32, 0xFFFFFFFF as uint32)
POISON_BYTE = 0xFF
NEVER, BARRIER = -1, -2  # shadow writer codes: never written; a live mbarrier's 8 bytes


class SharedMemory:
    """One CTA's shared memory: the bytes, and per byte a shadow of who wrote and read it last (a
    clock slot and epoch, hb.py) and at which kernel line, which named region it belongs to, and
    whether a live mbarrier occupies it. Only the launch's dynamic size (plus static arrays) is
    addressable."""

    def __init__(self, cta, dynamic_bytes):
        self.cta = cta
        self.size = SMEM_CAPACITY + SMEM_RESERVED
        self.buffer = np.full(self.size, POISON_BYTE, dtype=np.uint8)
        self.dirty = np.zeros(self.size, dtype=np.int32)  # writer thread id + 1, until it fences
        self.dynamic_bytes = dynamic_bytes
        self.dynamic_base = None
        self.static_next = None
        self.statics = []
        self.names = {}  # offset -> (name, size) for reports
        self.limit = SMEM_RESERVED + dynamic_bytes  # end of the addressable bytes (grows with statics)
        n = self.size
        self.w_who = np.full(n, NEVER, dtype=np.int32)
        self.w_ep = np.zeros(n, dtype=np.int32)
        self.w_site = np.zeros(n, dtype=np.int32)
        self.r_who = np.full(n, NEVER, dtype=np.int32)
        self.r_ep = np.zeros(n, dtype=np.int32)
        self.r_site = np.zeros(n, dtype=np.int32)
        # reads by the asynchronous units (TMA store sources, MMA operands), kept apart so that an
        # ordinary read of the same bytes does not hide them from a later write
        self.ar_who = np.full(n, NEVER, dtype=np.int32)
        self.ar_ep = np.zeros(n, dtype=np.int32)
        self.ar_site = np.zeros(n, dtype=np.int32)
        self._arw, self._arep = memoryview(self.ar_who), memoryview(self.ar_ep)
        self.rid = np.full(n, -1, dtype=np.int16)  # named region index per byte
        self._ww, self._wep, self._wsite = memoryview(self.w_who), memoryview(self.w_ep), memoryview(self.w_site)
        self._rw, self._rep, self._rsite = memoryview(self.r_who), memoryview(self.r_ep), memoryview(self.r_site)
        self._dirty = memoryview(self.dirty)
        self.region_list = []

    def window_address(self, offset):
        return (self.cta.rank << RANK_SHIFT) | offset

    def set_names(self, regions):
        """[(name, absolute offset, size)]: the kernel's shared-memory plan, for reports and the
        region-crossing check."""
        for i, (name, off, size) in enumerate(regions):
            self.names[off] = (name, size)
            self.rid[off:off + size] = i
            self.region_list.append((name, off, size))

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
            self.limit = self.static_next
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
        self.limit = max(self.limit, self.static_next)
        v = self.view(off, nbytes, dtype, shape)
        self.statics.append(v)
        return v

    # -- addresses -----------------------------------------------------------------------------
    def check(self, offset, nbytes, what):
        if offset < SMEM_RESERVED or offset + nbytes > self.limit:
            raise MemoryFault(f"{what}: shared bytes [0x{offset:x}, 0x{offset + nbytes:x}) of CTA "
                              f"{self.cta.rank_text()} are outside the launch's shared memory [0x{SMEM_RESERVED:x}, "
                              f"0x{self.limit:x}) ({self.dynamic_bytes} dynamic bytes){self._near(offset)}")

    def _near(self, offset):
        if not self.region_list:
            return ""
        name, off, size = max(self.region_list, key=lambda r: r[1] + r[2])
        return f"; the last named region is {name} [0x{off:x}, 0x{off + size:x})"

    def bounds_fault(self, view, key, how):
        n = view.shape[0] if view.ndim else 1
        raise MemoryFault(
            f"{how} of shared-memory index {key!r} at {_text(_site(2))}: the view has {n} elements of "
            f"{view.itemsize} B ({view.nbytes} B from 0x{view._base:x}), and this launch has {self.dynamic_bytes} "
            f"bytes of dynamic shared memory{self._near(view._base)}. On the chip the access lands outside "
            f"the CTA's allocation (an illegal-address fault, or another buffer's bytes).")

    def name_of(self, offset):
        best = None
        for start, (name, size) in self.names.items():
            if start <= offset < start + size:
                best = (name, start)
        if best is None:
            return f"smem 0x{offset:x}"
        name, start = best
        return f"{name}" if start == offset else f"{name}+0x{offset - start:x}"

    # -- the shadow: initialisation, barriers, regions, happens-before ----------------------------
    def touch(self, lo, hi, write, sid=None, thread=None):
        """An ordinary load or store of bytes [lo, hi) by the running thread at kernel site ``sid``.
        (Scalar work goes through memoryviews of the shadow arrays: a numpy scalar access costs
        several times more, and this runs for every shared-memory access of every thread.)"""
        t = thread or _current_thread()
        if t is None:
            return
        clock = t.warp.clock
        slot = clock.slot
        vcm = clock.vcm
        if not write:
            rw = self._rw
            if rw[lo] == slot and rw[hi - 1] == slot and self._rep[lo] == vcm[slot]:
                # this warp (another lane, typically) read these bytes in this epoch and its checks passed;
                # a write by another warp since would have been reported against that read
                return
        elif sid is None:
            sid = _source.site(1)
        if lo < SMEM_RESERVED or hi > self.limit:
            self.check(lo, hi - lo, f"{'st' if write else 'ld'}.shared by {t} at {_text(sid or _source.site(1))}")
        ww, wep = self._ww, self._wep
        for b in range(lo, hi):  # every byte: a vector access may overlap another's bytes in its middle
            x = ww[b]
            if x < 0:
                if x == BARRIER:
                    self.barrier_fault(b, "an ordinary " + ("store" if write else "load"), t, sid or _source.site(1))
                if not write:
                    self.uninit_fault(b, f"an ordinary load by {t} at {_text(sid or _source.site(1))}")
            elif x != slot and wep[b] > vcm[x]:
                self.race(b, write, slot, sid or _source.site(1), x, wep[b], self._wsite[b], True)
            if write:
                r = self._rw[b]
                if r >= 0 and r != slot and self._rep[b] > vcm[r]:
                    self.race(b, True, slot, sid, r, self._rep[b], self._rsite[b], False)
                r = self._arw[b]
                if r >= 0 and self._arep[b] > vcm[r]:
                    self.race(b, True, slot, sid, r, self._arep[b], int(self.ar_site[b]), False)
        ep = vcm[slot]
        if write:
            if hi - lo > 1 and self.rid[lo] != self.rid[hi - 1]:
                self.crossing_fault(lo, hi, f"an ordinary store by {t} at {_text(sid)}")
            _record(lo, hi, (ww, wep, self._wsite, self._dirty), (self.w_who, self.w_ep, self.w_site, self.dirty),
                    (slot, ep, sid, t.tid + 1))
            if self.cta is t.cta:
                t.unfenced.append((lo, hi))
        else:
            rw, rep, rsite = self._rw, self._rep, self._rsite
            if sid is None:
                sid = _source.site(1)
            _record(lo, hi, (rw, rep, rsite), (self.r_who, self.r_ep, self.r_site), (slot, ep, sid))
        if t.cta is not self.cta:
            self.cta.remote_access(t, slot, ep, sid, f"ordinary {'store' if write else 'load'} (DSMEM)")

    def touch_async(self, addrs, write, slot, vc, sid, what, issuer):
        """An asynchronous unit's access to the byte offsets ``addrs`` (an int array), ordered after
        what its clock ``vc`` knows; recorded as ``slot`` at the clock's epoch of that slot."""
        ww = self.w_who[addrs]
        if (ww == BARRIER).any():
            self.barrier_fault(int(addrs[np.flatnonzero(ww == BARRIER)[0]]), what, issuer, sid)
        if not write and (ww == NEVER).any():
            self.uninit_fault(int(addrs[np.flatnonzero(ww == NEVER)[0]]), f"{what} (issued at {_text(sid)})")
        i = first_unordered(ww, self.w_ep[addrs], vc, skip=slot)
        if i is not None:
            b = int(addrs[i])
            self.race(b, write, slot, sid, int(ww[i]), int(self.w_ep[b]), int(self.w_site[b]), True, what)
        ep = vc[slot]
        if write:
            for who, eps, sites in ((self.r_who, self.r_ep, self.r_site), (self.ar_who, self.ar_ep, self.ar_site)):
                rr = who[addrs]
                i = first_unordered(rr, eps[addrs], vc, skip=slot)
                if i is not None:
                    b = int(addrs[i])
                    self.race(b, True, slot, sid, int(rr[i]), int(eps[b]), int(sites[b]), False, what)
            rid = self.rid[addrs]
            if rid.min() != rid.max():
                self.crossing_fault(int(addrs.min()), int(addrs.max()) + 1, what)
            self._generic_then_async(addrs, sid, what)
            self.w_who[addrs] = slot
            self.w_ep[addrs] = ep
            self.w_site[addrs] = sid
        else:
            self.ar_who[addrs] = slot
            self.ar_ep[addrs] = ep
            self.ar_site[addrs] = sid

    def mark_barrier(self, off, live):
        """mbarrier.init (live) or mbarrier.inval: the barrier's 8 bytes are its state, not data."""
        self.w_who[off:off + 8] = BARRIER if live else NEVER

    # -- reports -----------------------------------------------------------------------------------
    def barrier_fault(self, b, what, t, sid):
        bar = self.cta.mbarriers.get(b - b % 8)
        name = bar.name if bar is not None else self.name_of(b)
        raise MemoryFault(
            f"{what} by {t} at {_text(sid)} touches shared byte 0x{b:x} of CTA {self.cta.rank_text()}, which "
            f"belongs to the live mbarrier {name} (its 8 bytes are the barrier's state). A buffer runs into "
            f"the barriers, or an offset is wrong; invalidate a barrier (mbarrier.inval) before reusing its bytes.")

    def crossing_fault(self, lo, hi, what):
        a, b = self.name_of(lo), self.name_of(hi - 1)
        raise MemoryFault(
            f"{what} writes shared bytes [0x{lo:x}, 0x{hi:x}) of CTA {self.cta.rank_text()}: it starts in {a} "
            f"and runs into {b}. A region of the shared-memory plan is too small, or an offset or stride is wrong.")

    def uninit_fault(self, b, what):
        raise UninitializedRead(
            f"{what} reads shared byte 0x{b:x} ({self.name_of(b)}) of CTA {self.cta.rank_text()}, which nothing "
            f"wrote before: fresh shared memory holds whatever the previous kernel left there. Write it (or "
            f"wait for the TMA that fills it) before reading it.")

    def race(self, b, write, slot, sid, other, other_ep, other_sid, other_wrote, what=None):
        cl = self.cta.cluster
        me = what or f"{'store' if write else 'load'} by {cl.slot_text(slot)}"
        them = f"{'write' if other_wrote else 'read'} by {cl.slot_text(other)} at {_text(other_sid)}"
        if what is None and cl.is_warp_slot(slot):
            t = _current_thread()
            entry = relaxed_rule.covering(t.warp.clock, other, other_ep) if t is not None else None
            if entry is not None:  # only a relaxed wait stood between them (relaxed.py)
                relaxed_rule.report(entry, f"the ordinary {'store' if write else 'load'} by {t} at {_text(sid)} "
                                           f"({self.name_of(b)})", f"the {them}")
        msg = (f"{me} at {_text(sid)} and the {them} touch shared byte 0x{b:x} ({self.name_of(b)}) of CTA "
               f"{self.cta.rank_text()}, and nothing orders them: no mbarrier phase, named barrier, cluster barrier "
               f"or bulk-group wait lies between them, so on the chip either may come first. Make the second wait "
               f"for a signal that the first one gives.")
        if cl.is_warp_slot(slot) and cl.is_warp_slot(other):
            raise DataRace(msg)
        raise SharedMemoryHazard(msg)  # one side is an asynchronous unit (TMA, tensor core)

    # -- proxy tracking --------------------------------------------------------------------------
    def generic_write(self, lo, hi):
        """An ordinary store of bytes [lo, hi) by the running thread (from a PTX twin)."""
        self.touch(lo, hi, True, _site(1))

    def store(self, off, data, thread=None):
        """An ordinary store of ``data`` (bytes as a uint8 array) at ``off`` from a PTX twin."""
        self.touch(off, off + len(data), True, _site(1), thread)
        self.buffer[off:off + len(data)] = data

    def async_write_scatter(self, addrs, data):
        self.buffer[addrs] = data
        self.dirty[addrs] = 0

    def _generic_then_async(self, addrs, sid, what):
        """An async-proxy write (a TMA load, a try_cancel response) of byte offsets ``addrs``, ordered after
        the last ordinary load or store of each byte (the race check came first): the PTX ISA orders a
        generic-proxy access before a later async-proxy access of the same bytes only through
        fence.proxy.async by the accessing thread, after its access and before the synchronisation that
        lets the async work go. A MissingProxyFence naming that access when its warp has not fenced since."""
        fenced = self.cta.cluster.proxy_fence_ep
        nwarps = len(fenced)
        for who, eps, sites, how in ((self.r_who, self.r_ep, self.r_site, "load"),
                                     (self.w_who, self.w_ep, self.w_site, "store")):
            ww = who[addrs]
            warp = (ww >= 0) & (ww < nwarps)
            if not warp.any():
                continue
            bad = warp & (eps[addrs] >= fenced[np.where(warp, ww, 0)])
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                b = int(addrs[i])
                cl = self.cta.cluster
                raise MissingProxyFence(
                    f"fence.proxy.async is missing after the ordinary {how} at {_text(int(sites[b]))} by "
                    f"{cl.slot_text(int(ww[i]))}, before the synchronisation that lets {what} (issued at "
                    f"{_text(sid)}) overwrite its bytes: byte 0x{b:x} ({self.name_of(b)}) of CTA "
                    f"{self.cta.rank_text()} is written through the async proxy, which is ordered after an ordinary "
                    f"access of the same bytes only by that fence (a barrier alone orders the generic proxy). Add "
                    f"ptx.fence_proxy_async() after the {how}, before the arrive that hands the bytes back.")

    def fence_proxy_async(self, thread):
        """Only the ranges this thread stored to since its last fence are visited (a scan of all of
        shared memory per fence dominated the epilogues' time). The warp's accesses so far are fenced
        against later async-proxy writes: its epoch moves on, and the new one is the fence's."""
        clock = thread.warp.clock
        clock.vc[clock.slot] += 1
        self.cta.cluster.proxy_fence_ep[clock.slot] = clock.vc[clock.slot]
        d, mark = self.dirty, thread.tid + 1
        for lo, hi in thread.unfenced:
            seg = d[lo:hi]
            seg[seg == mark] = 0
        thread.unfenced = []

    def check_fenced(self, lo, hi, reader, thread=None):
        """Bytes [lo, hi) written by ordinary stores that no fence.proxy.async of their writer covers are
        a MissingProxyFence, but only where the store is ordered before the reading unit, issued by
        ``thread``: a store that nothing orders lacks a barrier, which the race check that follows
        reports, naming both lines (a fence there would not help)."""
        if thread is not None and thread.warp.clock.relaxed:  # the issue orders a relaxed wait's phase
            relaxed_rule.settle(thread.warp.clock)
        d = self.dirty[lo:hi]
        if d.any():
            nz = np.flatnonzero(d)
            i = int(nz[0])
            if thread is not None:
                idx = nz + lo
                if first_unordered(self.w_who[idx], self.w_ep[idx], thread.warp.clock.vc) is not None:
                    return
                # another lane of the issuing warp executes the warp's fence together with it (the warp
                # runs in lockstep on the chip): here it may simply not have got there yet
                threads = self.cta.threads
                keep = [k for k in nz if threads[int(d[k]) - 1] is thread or threads[int(d[k]) - 1].warp is not thread.warp]
                if not keep:
                    return
                i = int(keep[0])
            writer = self.cta.threads[int(d[i]) - 1]
            wrote = _text(int(self.w_site[lo + i]))
            raise MissingProxyFence(
                f"fence.proxy.async is missing after the ordinary store at {wrote} by {writer}, before the "
                f"barrier that publishes it to {reader} at {_source.here()}: byte 0x{lo + i:x} ({self.name_of(lo)}), "
                f"written with an ordinary store, is read through the async proxy (bytes [0x{lo:x}, 0x{hi:x})), "
                f"which may not see the store. "
                f"Add ptx.fence_proxy_async() after the stores, before the barrier.")


def _record(lo, hi, views, arrays, values):
    """Set bytes [lo, hi) of each shadow array to its value: through memoryviews for an element (a
    numpy slice costs more for so few bytes), through numpy for longer stores."""
    if hi - lo <= 4:
        for mv, v in zip(views, values):
            for i in range(lo, hi):
                mv[i] = v
    else:
        for arr, v in zip(arrays, values):
            arr[lo:hi] = v


def _text(sid):
    return _source.text(sid)


class Tmem:
    """Tensor memory of one CTA and its column allocator (units of 32 columns)."""

    def __init__(self, cta):
        self.cta = cta
        self.cells = np.full((TMEM_LANES, TMEM_COLS), np.nan, dtype=np.float32)  # fresh TMEM: poisoned
        self.written = np.zeros((TMEM_LANES, TMEM_COLS), dtype=bool)
        # happens-before shadow per column: the last MMA that wrote it (async slot, epoch, site) and,
        # per lane quarter, the last tcgen05.ld that read it (warp slot, epoch, site)
        self.mma_who = np.full(TMEM_COLS, -1, dtype=np.int32)
        self.mma_ep = np.zeros(TMEM_COLS, dtype=np.int32)
        self.mma_site = np.zeros(TMEM_COLS, dtype=np.int32)
        self.ld_who = np.full((4, TMEM_COLS), -1, dtype=np.int32)
        self.ld_ep = np.zeros((4, TMEM_COLS), dtype=np.int32)
        self.ld_site = np.zeros((4, TMEM_COLS), dtype=np.int32)
        self.freed_by = {}  # 32-column unit -> (warp, site) of the dealloc that freed it last
        self.owner = [None] * (TMEM_COLS // 32)  # allocation start per 32-column unit
        self.allocations = {}  # start column -> (ncols, warp)
        self.relinquished = False
        self.alloc_warp = None
        self.sm = None  # the SM's shared TMEM when CTAs share SMs (launch.on_sms), else None

    def share_with(self, other):
        """Use the TMEM of ``other``'s SM: the same cells, shadows and column allocator (the
        allocation permit stays this CTA's own)."""
        for name in ("cells", "written", "mma_who", "mma_ep", "mma_site", "ld_who", "ld_ep", "ld_site",
                     "freed_by", "owner", "allocations", "sm"):
            setattr(self, name, getattr(other, name))

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
        self.cells[:, col:col + ncols] = np.nan  # a new allocation holds garbage, not zeros
        self.written[:, col:col + ncols] = False
        self.mma_who[col:col + ncols] = -1
        self.ld_who[:, col:col + ncols] = -1
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
        _no_negative(self, key)
        _charge(self, key, load=True)
        return np.ndarray.__getitem__(self, key)

    def __setitem__(self, key, value):
        _no_negative(self, key)
        _charge(self, key, load=False)
        np.ndarray.__setitem__(self, key, value)


def _no_negative(arr, key):
    """numpy wraps a negative index around to the end; on the chip it addresses memory before the
    array. (An index past the end raises IndexError, which the scheduler turns into a MemoryFault.)"""
    idx = key if isinstance(key, tuple) else (key,)
    for i in idx:
        if isinstance(i, (int, np.integer)) and i < 0:
            raise MemoryFault(f"{_current_thread()} indexed a global array of shape {arr.shape} with {key!r} at "
                              f"{_text(_source.site(2))}: a negative index addresses memory before the array on "
                              f"the chip (numpy would wrap it around).")


def _charge(arr, key, load):
    t = _current_thread()
    if t is None:
        return
    costs = of(t)

    n = 1
    if not (isinstance(key, tuple) and all(isinstance(k, (int, np.integer)) for k in key)) and not isinstance(
            key, (int, np.integer)):
        sub = np.ndarray.__getitem__(arr, key)
        n = sub.size if isinstance(sub, np.ndarray) else 1
    if t.global_start is None:
        t.global_start = t.clock
        if load:  # a thread waits for its loads' data, not for its stores to land
            t.clock += costs.global_latency_cycles
    t.clock += costs.global_access_cycles * n
