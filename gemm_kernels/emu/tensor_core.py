"""The tensor core: tcgen05.mma kind::f16 read bit by bit from its descriptors, and commit.

An MMA reads A and B from shared memory when it executes, not when it is issued, exactly as the
hardware may; so a buffer overwritten too early gives a wrong answer here too, and is reported.
Products of fp16 (or bf16) inputs are formed exactly in fp32 and summed in fp32 (numpy float32
matmul); the hardware's internal summation order differs, so results agree to fp32 rounding.
"""
from __future__ import annotations

import numpy as np

from . import costmodel, drain
from .context import thread as _thread
from .errors import (
    ArrivalMismatch,
    DescriptorError,
    MemoryFault,
    SharedMemoryHazard,
    TmemHazard,
    UninitializedRead,
)
from .hb import MMA, TC_WRITE, first_unordered
from .mbarrier import readers_outnumber_count
from .scheduler import AsyncOp
from .source import operand_origin, site, text
from .tma import swizzle_offsets
from .tmem_rules import check_allocated

_SWIZZLE_CODES = {0: "none", 2: "128B", 4: "64B", 6: "32B"}
_ROW_BYTES = {"128B": 128, "64B": 64, "32B": 32}


def decode_instr_desc(idesc):
    idesc = int(idesc)
    d = {
        "sparse": (idesc >> 2) & 1, "d_fmt": (idesc >> 4) & 3, "a_fmt": (idesc >> 7) & 7,
        "b_fmt": (idesc >> 10) & 7, "neg_a": (idesc >> 13) & 1, "neg_b": (idesc >> 14) & 1,
        "a_mn": (idesc >> 15) & 1, "b_mn": (idesc >> 16) & 1,
        "n": ((idesc >> 17) & 0x3F) << 3, "m": ((idesc >> 24) & 0x1F) << 4,
    }
    return d


def check_instr_desc(d, cta_group):
    where = f"instruction descriptor (M={d['m']}, N={d['n']}, cta_group::{cta_group})"
    if d["sparse"]:
        raise DescriptorError(f"{where}: sparsity bit set; the kernels use dense MMAs")
    if d["d_fmt"] not in (0, 1):
        raise DescriptorError(f"{where}: D format {d['d_fmt']} is not F16 (0) or F32 (1) for kind::f16")
    if d["a_fmt"] not in (0, 1) or d["b_fmt"] not in (0, 1):
        raise DescriptorError(f"{where}: A/B formats {d['a_fmt']}/{d['b_fmt']} are not F16 (0) or BF16 (1)")
    if d["a_mn"] or d["b_mn"]:
        raise DescriptorError(f"{where}: MN-major operands are valid PTX but the emulator models K-major only")
    m, n = d["m"], d["n"]
    if cta_group == 1:
        if m not in (64, 128) or not 8 <= n <= 256 or n % 8:
            raise DescriptorError(f"{where}: cta_group::1 kind::f16 needs M in {{64, 128}} and N a multiple of 8 "
                                  f"in [8, 256]")
        if m == 64:
            raise DescriptorError(f"{where}: M=64 is valid PTX but its TMEM layout is not modelled")
    else:
        if m not in (128, 256) or not 16 <= n <= 256 or n % 16:
            raise DescriptorError(f"{where}: cta_group::2 kind::f16 needs M in {{128, 256}} and N a multiple of "
                                  f"16 in [16, 256]")
        if m == 128:
            raise DescriptorError(f"{where}: cta_group::2 with M=128 is valid PTX but its layout is not modelled")


def decode_smem_desc(desc):
    desc = int(desc)
    return {
        "start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4, "sbo": ((desc >> 32) & 0x3FFF) << 4,
        "fixed": (desc >> 46) & 7, "base_offset": (desc >> 49) & 7, "lbo_mode": (desc >> 52) & 1,
        "swizzle_code": (desc >> 61) & 7,
    }


def operand_addresses(desc, rows, which):
    """Shared byte addresses of a rows x 16 fp16 K-major operand described by ``desc``:
    an int array of shape (rows, 16) holding the address of each element's first byte."""
    d = decode_smem_desc(desc)
    if d["fixed"] != 1:
        raise DescriptorError(f"{which} descriptor 0x{int(desc):016x}: bits 46-48 must be 0b001 on sm_100 "
                              f"(found {d['fixed']:#05b}); an sm_90 wgmma descriptor lacks this bit")
    if d["lbo_mode"]:
        raise DescriptorError(f"{which} descriptor: LBO mode 1 (absolute) is sm_103a-only")
    code = d["swizzle_code"]
    if code not in _SWIZZLE_CODES:
        raise DescriptorError(f"{which} descriptor: swizzle code {code} is "
                              f"{'128B_BASE32B (not modelled)' if code == 1 else 'invalid'}")
    if d["base_offset"]:
        raise DescriptorError(f"{which} descriptor: base offset {d['base_offset']} != 0 is not modelled; align "
                              f"tiles to the swizzle repeat")
    mode = _SWIZZLE_CODES[code]
    r = np.arange(rows)[:, None]
    k = np.arange(16)[None, :]
    if mode == "none":
        addr = d["start"] + (r // 8) * d["sbo"] + (k // 8) * d["lbo"] + (r % 8) * 16 + (k % 8) * 2
    else:
        addr = d["start"] + (r // 8) * d["sbo"] + (r % 8) * _ROW_BYTES[mode] + k * 2
        addr = swizzle_offsets(addr, mode)
    return addr, mode


def _as_float(raw_u16, fmt):
    if fmt == 0:
        return raw_u16.view(np.float16).astype(np.float32)
    return (raw_u16.astype(np.uint32) << 16).view(np.float32)


class Mma(AsyncOp):
    unit = "tensor core"
    #: elements of K one MMA reads (32 bytes of each row); step 11's kinds (tensor_core_lowp) change it
    k = 16

    def decode(self, idesc, cta_group):
        """The instruction descriptor's fields, checked for this kind (kind::f16)."""
        d = decode_instr_desc(idesc)
        check_instr_desc(d, cta_group)
        return d

    def __init__(self, thread, ctas, d_tmem, a_desc, b_desc, idesc, accumulate, cta_group):
        self.cta_group = cta_group
        d = self.decode(idesc, cta_group)
        self.fmt = d
        self.m, self.n = d["m"], d["n"]
        self.ctas = ctas  # [leader] or [even, odd]
        rows_a = self.m // len(ctas)
        rows_b = self.n // len(ctas)
        self.a_addr, _ = operand_addresses(a_desc, rows_a, "A")
        self.b_addr, _ = operand_addresses(b_desc, rows_b, "B")
        self.d_lane = (int(d_tmem) >> 16) & 0xFFFF
        self.d_col = int(d_tmem) & 0xFFFF
        self.accumulate = bool(accumulate)
        self.site = site(1)
        super().__init__(thread, f"MMA M={self.m} N={self.n} K={self.k} into TMEM columns {self.d_col}..{self.d_col + self.n - 1} "
                                 f"(cta_group::{cta_group}, issued by {thread})")
        if self.d_lane:
            raise MemoryFault(f"{self.description}: D address has lane {self.d_lane}; an M={self.m} accumulator starts "
                              f"at lane 0")
        self.ranges = []
        thread.tcgen05_op("tcgen05.mma", self.site, TC_WRITE)
        self.slot, self.vc = thread.warp.clock.async_op(MMA)
        for cta in ctas:
            check_allocated(thread, cta, self.d_col, self.n, "an MMA", self.site)
            for warp in cta.warps:
                for ld in warp.outstanding_ld:
                    if ld.col0 < self.d_col + self.n and self.d_col < ld.col1:
                        raise TmemHazard(
                            f"{thread} issued an MMA at {text(self.site)} into TMEM columns {self.d_col}.."
                            f"{self.d_col + self.n - 1} of CTA {cta.rank_text()} while {warp} has a tcgen05.ld of columns "
                            f"{ld.col0}..{ld.col1 - 1} (at {text(ld.site)}) outstanding (no tcgen05.wait::ld yet). The "
                            f"writeback must finish reading (wait::ld, then signal) before the next MMA overwrites the "
                            f"accumulator.")
            smem = cta.smem
            a_lo, a_hi = int(self.a_addr.min()), int(self.a_addr.max()) + 2
            b_lo, b_hi = int(self.b_addr.min()), int(self.b_addr.max()) + 2
            for lo, hi, name in ((a_lo, a_hi, "A"), (b_lo, b_hi, "B")):
                smem.check(lo, hi - lo, f"MMA operand {name}")
                smem.check_fenced(lo, hi, f"the MMA issued by {thread} (operand {name})", thread)
                for w in cta.smem_writers:
                    if w.lo < hi and lo < w.hi:
                        early = w.bar.completed_early(w) if getattr(w, "bar", None) is not None else None
                        if early is not None:  # the cause: the copy's barrier was announced too few bytes
                            raise early
                        at = f", issued at {text(w.site)}," if getattr(w, "site", 0) else ""
                        raise SharedMemoryHazard(
                            f"{thread} issued an MMA reading operand {name} at {smem.name_of(lo)} of CTA "
                            f"{cta.rank_text()} (at {text(self.site)}) while {w.description}{at} is still writing it: the copy targets "
                            f"a buffer the MMA reads, or the MMA did not wait on the stage's TMA barrier first.")
                self.ranges.append((cta, lo, hi))
            for addrs, name in ((self.a_addr, "A"), (self.b_addr, "B")):
                smem.touch_async(addrs.ravel(), False, self.slot, self.vc, self.site,
                                 f"the MMA issued by {thread} (operand {name} at {smem.name_of(int(addrs.min()))})",
                                 thread)
            self._check_tmem_order(cta, thread)
        self.lo = min(r[1] for r in self.ranges)
        self.hi = max(r[2] for r in self.ranges)
        self.snapshots = None if thread.launch.timing else [
            (cta, cta.smem.buffer[self.a_addr].copy(), cta.smem.buffer[self.b_addr].copy()) for cta in ctas]
        for cta in ctas:
            cta.smem_readers.append(self)
            cta.pending_mma_writes.append(self)
        leader = thread.cta
        self.start = max(thread.clock, getattr(leader, "tc_busy_until", 0.0))
        # each CTA's tensor core computes its own M/2 rows of a pair MMA, at the same time
        self.end = self.start + costmodel.of(thread).mma_cycles(self.m // len(ctas), self.n, 16)
        leader.tc_busy_until = self.end
        thread.unretired_mma.append(self)
        tr = thread.launch.trace
        if tr is not None:
            tr.add(lane=f"CTA {leader.linear} tensor core" if thread.launch.multi_cta else "tensor core", op="mma",
                   start=costmodel.of(thread).cycles_to_ns(self.start), end=costmodel.of(thread).cycles_to_ns(self.end), cta=leader.linear,
                   flops=2 * self.m * self.n * self.k,
                   extra={"ctas": [c.linear for c in ctas], "m": self.m, "n": self.n, "d_col": self.d_col,
                          "a": [c.smem.name_of(int(self.a_addr.min())) for c in ctas],
                          "b": [c.smem.name_of(int(self.b_addr.min())) for c in ctas]})

    def _check_tmem_order(self, cta, thread):
        """The accumulator's columns: every earlier tcgen05.ld of them must be ordered before this MMA
        (the readers waited on their load and signalled); then this MMA is their last writer."""
        tm = cta.tmem
        cols = slice(self.d_col, self.d_col + self.n)
        who = tm.ld_who[:, cols]
        hit = first_unordered(who, tm.ld_ep[:, cols], self.vc)
        if hit is not None:
            q, c = hit
            col = self.d_col + c
            low = readers_outnumber_count(self, cta, thread, int(who[q, c]), int(tm.ld_site[q, col]), col, q)
            if low:
                raise ArrivalMismatch(low)
            raise TmemHazard(
                f"{thread} issued an MMA at {text(self.site)} into TMEM columns {self.d_col}..{self.d_col + self.n - 1} "
                f"of CTA {cta.rank_text()}, but the tcgen05.ld of column {col} by "
                f"{cta.cluster.slot_text(int(who[q, c]))} at {text(int(tm.ld_site[q, col]))} is not ordered before it: "
                f"the MMA may overwrite the accumulator while it is being read. The readers must finish (wait::ld), "
                f"fence::before_thread_sync and signal a barrier that the MMA issuer waits on.")
        hit = first_unordered(tm.mma_who[cols], tm.mma_ep[cols], self.vc, skip=self.slot)
        if hit is not None:  # two issuers' MMAs write the same columns, unordered: overlapping accumulators
            col = self.d_col + hit
            other = int(tm.mma_who[col])
            raise TmemHazard(
                f"accumulators overlap in TMEM: {thread} issued an MMA at {text(self.site)} into columns "
                f"{self.d_col}..{self.d_col + self.n - 1} of CTA {cta.rank_text()} (D address "
                f"{operand_origin(self.site)}), but column {col} also holds the accumulator of "
                f"{cta.cluster.slot_text(other)} at {text(int(tm.mma_site[col]))}, and neither MMA is ordered "
                f"before the other: each overwrites the other's sums. Give every accumulator its own TMEM "
                f"columns (its offset from the allocation's base).")
        tm.mma_who[cols] = self.slot
        tm.mma_ep[cols] = self.vc[self.slot]
        tm.mma_site[cols] = self.site

    def reads(self, cta, lo, hi):
        """Does this MMA read any of the shared bytes [lo, hi) of ``cta``?"""
        return any(c is cta and r_lo < hi and lo < r_hi for c, r_lo, r_hi in self.ranges)

    def _account_tmem(self, cta, rows):
        """Initialisation tracking of the accumulator (in timing mode too): accumulating into cells
        nothing wrote is an UninitializedRead; afterwards the cells are written."""
        written = cta.tmem.written[0:rows, self.d_col:self.d_col + self.n]
        if self.accumulate and not written.all():
            lane, col = (int(x[0]) for x in np.nonzero(~written))
            raise UninitializedRead(
                f"{self.description} at {text(self.site)} accumulates (enable-input-d = 1) into TMEM lane "
                f"{lane}, column {self.d_col + col} of CTA {cta.rank_text()}, which no earlier MMA or tcgen05.st "
                f"wrote: fresh TMEM holds garbage, not zeros. The first MMA of an accumulation must "
                f"overwrite (accumulate = 0).")
        written[...] = True

    def execute(self):
        timing = self.snapshots is None  # timing mode (gemm_kernels.perf): the checks, no values
        prod = None if timing else self._product()
        rows = self.m // len(self.ctas)
        for i, cta in enumerate(self.ctas):
            self._account_tmem(cta, rows)
            if not timing:
                cells = cta.tmem.cells[0:rows, self.d_col:self.d_col + self.n]
                block = prod[i * rows:(i + 1) * rows]
                if self.accumulate:
                    block = cells + block
                if self.fmt["d_fmt"] == 0:
                    block = block.astype(np.float16).astype(np.float32)
                cells[...] = block
            cta.smem_readers.remove(self)
            cta.pending_mma_writes.remove(self)

    def _product(self):
        """A @ B.T of this MMA's operands in float32, after checking they did not change since issue."""
        a_parts, b_parts = [], []
        for buf in self._operand_buffers():
            raw_a = np.stack([buf[self.a_addr], buf[self.a_addr + 1]], axis=-1).view(np.uint16)[..., 0]
            raw_b = np.stack([buf[self.b_addr], buf[self.b_addr + 1]], axis=-1).view(np.uint16)[..., 0]
            a_parts.append(_as_float(raw_a, self.fmt["a_fmt"]))
            b_parts.append(_as_float(raw_b, self.fmt["b_fmt"]))
        a = np.concatenate(a_parts, axis=0)
        b = np.concatenate(b_parts, axis=0)
        return a @ b.T  # (M, N) in float32

    def _operand_buffers(self):
        """Each CTA's shared memory, after checking the operands did not change since issue."""
        bufs = []
        for cta, a_snap, b_snap in self.snapshots:
            buf = cta.smem.buffer
            a_now, b_now = buf[self.a_addr], buf[self.b_addr]
            if not (np.array_equal(a_now, a_snap) and np.array_equal(b_now, b_snap)):
                raise SharedMemoryHazard(
                    f"{self.description}: its operands in CTA {cta.rank_text()} shared memory (at "
                    f"{cta.smem.name_of(self.lo)}) changed between issue and execution. Something overwrote the "
                    f"buffer before the MMA completed: wait for the commit's barrier before reusing it.")
            bufs.append(buf)
        return bufs


def issue_mma(group, make):
    """The calling thread issues the MMA ``make(thread, ctas)`` builds (``ctas``: its CTA, or the pair
    for cta_group::2, which only the even CTA may issue), in issue order after its earlier MMAs."""
    t = _thread()
    t.launch.use_cta_group(group, "tcgen05.mma", t)
    if group == 2:
        if t.cta.rank % 2:
            raise MemoryFault(f"{t} issued a cta_group::2 MMA from the odd CTA of the pair; the even "
                              f"(leader) CTA issues for both")
        ctas = [t.cta, t.cta.cluster.ctas[t.cta.rank + 1]]
    else:
        ctas = [t.cta]
    op = make(t, ctas)
    op.predecessor = t.last_mma
    t.last_mma = op
    t.scheduler.submit(op)
    t.advance()


class Commit(AsyncOp):
    unit = "tensor core"

    def __init__(self, thread, bars, after):
        names = ", ".join(b.name for b in bars)
        super().__init__(thread, f"tcgen05.commit -> {names} (after {len(after)} MMA(s) of {thread})")
        for bar in bars:
            bar.require_fenced(f"the tcgen05.commit issued by {thread}")
        self.bars = bars
        self.after = after
        self.site = site(1)
        for m in after:  # (a report of a buffer reused while an MMA reads it names the commit to wait for)
            m.commit = self
        cta = thread.cta
        if thread.launch.cta_group == 2 and cta.rank ^ 1 < cta.cluster.size:
            self.pair = (cta, cta.cluster.ctas[cta.rank ^ 1])  # the PTX ISA: the peer CTA must not exit first
        self.at = max([thread.clock] + [m.end for m in after])
        # the commit's arrival carries the completion of every earlier MMA of the warp, and it is an
        # implicit tcgen05.fence::before_thread_sync
        self.vc = thread.warp.clock.async_so_far()
        thread.tc_unfenced = None

    def ready(self):
        return all(m.done for m in self.after)

    def barriers(self):
        return self.bars

    def arrival_text(self):
        return drain.arrival_text(self, "the tcgen05.commit")

    def execute(self):
        for bar in self.bars:
            bar.arrive(self.issuer, 1, at=self.at, async_vc=self.vc, tcgen05=True, op=self)
