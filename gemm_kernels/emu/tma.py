"""The TMA engine: a model of a 2D tiled tensor map, tiled loads into (cluster) shared memory that
complete transaction bytes on an mbarrier, and tiled stores in bulk groups."""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import byte_bounds

from . import costmodel, drain
from .errors import MemoryFault, SharedMemoryHazard
from .hb import BULK, TMA
from .scheduler import AsyncOp
from .source import here, site, text

SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}


def swizzle_offsets(addr, mode):
    """Apply a TMA/UMMA swizzle to absolute shared-memory byte addresses (numpy int array).

    128B: XOR bits [6:4] with [9:7]; 64B: bits [5:4] with [8:7]; 32B: bit 4 with bit 7 (CuTe's
    Swizzle<3,4,3>, <2,4,3>, <1,4,3>; PTX ISA 5.5.7). The pattern is anchored at absolute
    addresses, which is why tiles are aligned to the pattern's repeat (1024/512/256 B)."""
    if mode == "none":
        return addr
    bits = {"128B": 7, "64B": 3, "32B": 1}[mode]
    return addr ^ (((addr >> 7) & bits) << 4)


class TensorMapModel:
    """What the emulator knows of a CUtensorMap: the global array, the box, the swizzle."""

    def __init__(self, array, box_rows, box_cols, swizzle="128B", name="tensor map"):
        if array.ndim != 2:
            raise ValueError("a 2D tensor map needs a 2D array")
        self.array = array
        self.box = (int(box_rows), int(box_cols))
        self.swizzle = swizzle
        self.name = name
        self.elem = array.dtype.itemsize
        row_bytes = self.box[1] * self.elem
        if swizzle != "none" and row_bytes > SWIZZLE_BYTES[swizzle]:
            raise ValueError(f"{name}: box rows of {row_bytes} B exceed the {swizzle} swizzle span")
        if array.strides[0] % 16:
            raise ValueError(f"{name}: row stride {array.strides[0]} B is not a multiple of 16")
        self.box_bytes = self.box[0] * row_bytes
        r = np.arange(self.box[0])[:, None]
        c = np.arange(row_bytes)[None, :]
        self._lin = (r * row_bytes + c).ravel()  # byte offset of each box byte before swizzling

    def check_box_start(self, c0, c1, what):
        """Refuse box positions the hardware faults on (an H200 raised CUDA_ERROR_ILLEGAL_INSTRUCTION
        for each; tests/test_ground_truth.py): a box whose first column is not 16-byte aligned in
        global memory, and a TMA store whose box starts at a negative coordinate. Loads may start at
        negative coordinates (the out-of-bounds part is zero-filled)."""
        if (c0 * self.elem) % 16:
            raise MemoryFault(
                f"{what} of {self.name} at (col {c0}, row {c1}): the box starts {c0 * self.elem} bytes into a row, "
                f"not a multiple of 16; the TMA unit needs 16-byte aligned box starts in global memory (an H200 "
                f"stops the kernel with an illegal-instruction error)")
        if what.startswith("TMA store") and (c0 < 0 or c1 < 0):
            raise MemoryFault(
                f"{what} of {self.name} at (col {c0}, row {c1}): a TMA store box may not start at a negative "
                f"coordinate (an H200 stops the kernel with an illegal-instruction error); out-of-bounds "
                f"elements past the end of the matrix are skipped, but not before its start")

    def smem_addresses(self, dst):
        return swizzle_offsets(dst + self._lin, self.swizzle)

    def read_box(self, c0, c1):
        """The box at column c0, row c1 as bytes; out-of-bounds elements read as zero."""
        rows, cols = self.box
        out = np.zeros((rows, cols), dtype=self.array.dtype)
        R, C = self.array.shape
        r0, r1 = max(c1, 0), min(c1 + rows, R)
        k0, k1 = max(c0, 0), min(c0 + cols, C)
        if r0 < r1 and k0 < k1:
            out[r0 - c1:r1 - c1, k0 - c0:k1 - c0] = self.array[r0:r1, k0:k1]
        return out.view(np.uint8).ravel()

    def write_box(self, c0, c1, data):
        """Store a box, clipped at the map's bounds: rows exactly at M, columns at the end of the 16-byte
        chunk that holds column N - 1. An H200 writes that last chunk whole (tests/hopper/i23_cases.py,
        ragged_stores: a 17-column map of uint16 gets columns 17-23 written too; mode_stores: the same
        without swizzle, with 128B and for uint32), while loads fill zeros exactly from column N on; so
        a row's padding up to the next 16 bytes is written by a store."""
        rows, cols = self.box
        box = data.view(self.array.dtype).reshape(rows, cols)
        R, C = self.array.shape
        reach = -(-C * self.elem // 16) * 16 // self.elem  # columns a store may write
        r0, r1 = max(c1, 0), min(c1 + rows, R)
        k0, k1 = max(c0, 0), min(c0 + cols, reach)
        if r0 < r1 and k0 < k1:
            target = self.array if k1 <= C else self._rows_to_chunk_end(reach)
            target[r0:r1, k0:k1] = box[r0 - c1:r1 - c1, k0 - c0:k1 - c0]

    def _rows_to_chunk_end(self, reach):
        """The map's rows widened to ``reach`` columns (the padding a ragged store writes), refused
        when the last row's chunk would lie past the memory the array lives in."""
        arr = self.array
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        end = arr.ctypes.data + (arr.shape[0] - 1) * arr.strides[0] + reach * self.elem
        if end > byte_bounds(root)[1]:
            raise MemoryFault(
                f"TMA store into {self.name}: its rows are {arr.shape[1]} elements ({arr.shape[1] * self.elem} B) "
                f"long, so a store writes each row's last 16-byte chunk whole (columns {arr.shape[1]}-{reach - 1}, "
                f"as an H200 does), and the last row's chunk lies past the end of the array's memory. Give the "
                f"array {reach} columns of pitch and map its first {arr.shape[1]}.")
        return np.lib.stride_tricks.as_strided(arr, shape=(arr.shape[0], reach), strides=arr.strides)


def tensor_map(thread, address):
    tm = thread.launch.tensor_maps.get(int(address))
    if tm is None:
        raise MemoryFault(f"{thread}: 0x{int(address):x} is not the address of a tensor map of this launch")
    return tm


def _engine_time(cta, issue_clock, nbytes):
    start = max(issue_clock + costmodel.of(cta).tma_latency_cycles, getattr(cta, "tma_busy_until", 0.0))
    end = start + costmodel.of(cta).tma_cycles(nbytes)
    cta.tma_busy_until = end
    return start, end


class TmaLoad(AsyncOp):
    unit = "TMA"

    def __init__(self, thread, tmap, dst_cta, dst_off, c0, c1, bar, label):
        super().__init__(thread, f"TMA load {tmap.name} box at (col {c0}, row {c1}) -> CTA {dst_cta.rank_text()} "
                                 f"{dst_cta.smem.name_of(dst_off)} signalling {bar.name} (issued by {thread})")
        self.tmap, self.cta, self.off, self.c0, self.c1, self.bar = tmap, dst_cta, dst_off, c0, c1, bar
        self.phase = bar.completed  # the phase its bytes count towards (a report's cause: completed_early)
        bar.copy_after_its_phase(thread, self)
        tmap.check_box_start(c0, c1, f"TMA load issued by {thread}")
        bar.require_fenced(f"the TMA load issued by {thread}")
        self.addrs = tmap.smem_addresses(dst_off)
        self.lo, self.hi = int(self.addrs.min()), int(self.addrs.max()) + 1
        dst_cta.smem.check(self.lo, self.hi - self.lo, "TMA load destination")
        self.start, self.end = _engine_time(thread.cta, thread.clock, tmap.box_bytes)
        for other in list(dst_cta.smem_readers):
            if other.reads(dst_cta, self.lo, self.hi):
                # a missing ordering: the wait belongs in the issuing thread, after the commit that tracks the
                # MMA and before this load, so the report names both lines
                commit = getattr(other, "commit", None)
                signal = (f"the barrier that the MMA's tcgen05.commit at {text(commit.site)} signals" if commit is not None
                          else "the barrier that the MMA's commit signals")
                raise SharedMemoryHazard(
                    f"{thread} issued a TMA load at {here()} into {dst_cta.smem.name_of(self.lo)} (bytes "
                    f"0x{self.lo:x}-0x{self.hi:x}) of CTA {dst_cta.rank_text()} while {other.description} (issued at "
                    f"{text(other.site)}) still reads those bytes. Wait for {signal} (the stage's 'empty' barrier) "
                    f"before this load reuses the buffer.")
        dst_cta.smem_writers.append(self)
        # happens-before: the copy may write its bytes at any moment from now until its barrier phase
        # completes, so it is recorded now, as a write by the issuing warp's asynchronous work
        self.site = site(1)
        pairing = dst_cta.copy_bar.setdefault(self.lo, {})  # (a deadlock report: a buffer filled via two barriers)
        if bar not in pairing:
            pairing[bar] = self.site
        bar.copy_dsts.add((dst_cta, self.lo))
        self.slot, self.vc = thread.warp.clock.async_op(TMA)
        dst_cta.smem.touch_async(self.addrs, True, self.slot, self.vc, self.site,
                                 f"the TMA load issued by {thread} into {dst_cta.smem.name_of(self.lo)}", thread)
        if dst_cta is not thread.cta:
            dst_cta.remote_access(thread, self.slot, int(self.vc[self.slot]), self.site, "a TMA load (DSMEM)")
        thread.event(thread.warp_role(), "tma.issue", thread.clock, thread.clock + 1, barrier=bar.name,
                     nbytes=tmap.box_bytes, extra={"bar_cta": bar.cta.linear})
        if thread.launch.trace is not None:
            thread.launch.trace.add(lane=f"CTA {thread.cta.linear} TMA" if thread.launch.multi_cta else "TMA unit",
                                    op="tma.load", start=costmodel.of(thread).cycles_to_ns(self.start),
                                    end=costmodel.of(thread).cycles_to_ns(self.end), cta=thread.cta.linear,
                                    barrier=bar.name, nbytes=tmap.box_bytes, detail=label,
                                    extra={"bar_cta": bar.cta.linear, "map": tmap.name, "col": int(c0),
                                           "row": int(c1), "box": tmap.box, "into": dst_cta.linear,
                                           "region": dst_cta.smem.name_of(dst_off)})

    def execute(self):
        if self.cta.launch.timing:  # timing mode: the write's hazard bookkeeping only
            self.cta.smem.dirty[self.addrs] = 0
        else:
            self.cta.smem.async_write_scatter(self.addrs, self.tmap.read_box(self.c0, self.c1))
        self.cta.smem_writers.remove(self)
        self.bar.complete_tx(self.tmap.box_bytes, f"TMA load of {self.tmap.name}", at=self.end, vc=self.vc, op=self)

    def barriers(self):
        return (self.bar,)

    def arrival_text(self):
        return drain.arrival_text(self, "the complete_tx of the TMA load")


class TmaStore(AsyncOp):
    unit = "TMA"

    def __init__(self, thread, tmap, src_off, c0, c1):
        super().__init__(thread, f"TMA store {thread.cta.smem.name_of(src_off)} -> {tmap.name} at (col {c0}, row {c1}) "
                                 f"(issued by {thread})")
        self.tmap, self.cta, self.c0, self.c1 = tmap, thread.cta, c0, c1
        tmap.check_box_start(c0, c1, f"TMA store issued by {thread}")
        self.addrs = tmap.smem_addresses(src_off)
        self.lo, self.hi = int(self.addrs.min()), int(self.addrs.max()) + 1
        smem = thread.cta.smem
        smem.check(self.lo, self.hi - self.lo, "TMA store source")
        smem.check_fenced(self.lo, self.hi, f"the TMA store issued by {thread}", thread)
        self.site = site(1)
        self.slot, self.vc = thread.warp.clock.async_op(BULK)
        smem.touch_async(self.addrs, False, self.slot, self.vc, self.site,
                         f"the TMA store issued by {thread} from {smem.name_of(self.lo)}", thread)
        self.snapshot = None if thread.launch.timing else smem.buffer[self.addrs].copy()
        self.start, self.end = _engine_time(thread.cta, thread.clock, tmap.box_bytes)
        self.waiters = thread.bulk_waitable
        if thread.launch.trace is not None:
            thread.launch.trace.add(lane=f"CTA {thread.cta.linear} TMA" if thread.launch.multi_cta else "TMA unit",
                                    op="tma.store", start=costmodel.of(thread).cycles_to_ns(self.start),
                                    end=costmodel.of(thread).cycles_to_ns(self.end), cta=thread.cta.linear,
                                    nbytes=tmap.box_bytes)

    def execute(self):
        if self.snapshot is None:  # timing mode
            return self.waiters.notify()
        data = self.cta.smem.buffer[self.addrs]
        if not np.array_equal(data, self.snapshot):
            raise SharedMemoryHazard(
                f"{self.description}: the source buffer was overwritten before the store read it. Wait with "
                f"cp.async.bulk.wait_group.read before writing the staging buffer again.")
        self.tmap.write_box(self.c0, self.c1, data)
        self.waiters.notify()


