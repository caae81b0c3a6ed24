"""tcgen05: Blackwell's tensor core and its tensor memory (TMEM).

TMEM is 128 lanes x 512 columns of 32-bit cells per CTA, allocated by whole warps in columns.
One thread issues an MMA that reads A and B from shared memory through matrix descriptors and
accumulates into TMEM; ``commit`` makes an mbarrier arrive once the thread's MMAs completed; warps
read their lane quarter of TMEM back into registers with ``tcgen05.ld``."""
import numpy as np

from ..emu import costmodel, tmem_rules
from ..emu.context import thread as _thread
from ..emu.errors import (
    LaneQuarterViolation,
    MemoryFault,
    TmemHazard,
    TmemLifecycleError,
)
from ..emu.hb import TC_DEALLOC, TC_READ
from ..emu.source import site as _site
from ..emu.tensor_core import Commit, Mma, issue_mma
from ._declare import asm_op, f32, twin, u16, u32, u64


# -- allocation ----------------------------------------------------------------------------------
def _peer(t):
    """The other CTA of ``t``'s pair (cta_group::2 work is shared by ranks 2i and 2i + 1)."""
    cluster = t.cta.cluster
    if cluster.size < 2:
        raise MemoryFault(f"{t}: a .cta_group::2 operation needs a cluster of (at least) 2 CTAs; this launch's "
                          f"clusters have {cluster.size}")
    return cluster.ctas[t.cta.rank ^ 1]


def _alloc_ops(group):
    alloc = asm_op(
        f"tmem_alloc{'_cg2' if group == 2 else ''}",
        f"tcgen05.alloc.cta_group::{group}.sync.aligned.shared::cta.b32 [{{dst}}], {{ncols}};",
        operands=(("dst", u32), ("ncols", u32)),
        doc=f"Whole-warp (cta_group::{group}) allocation of ``ncols`` TMEM columns (a power of 2 in "
            f"[32, 512]); the TMEM address (lane 0, first column) is written to shared memory at ``dst``."
            + (" Executed by one warp in each CTA of the pair, with the same ``dst``." if group == 2 else ""))
    dealloc = asm_op(
        f"tmem_dealloc{'_cg2' if group == 2 else ''}",
        f"tcgen05.dealloc.cta_group::{group}.sync.aligned.b32 {{taddr}}, {{ncols}};",
        operands=(("taddr", u32), ("ncols", u32)),
        doc=f"Free ``ncols`` TMEM columns at ``taddr`` (whole warp, cta_group::{group}). Every allocation "
            f"must be freed before the kernel exits, after all MMAs and loads of those columns completed.")
    relinquish = asm_op(
        f"tmem_relinquish{'_cg2' if group == 2 else ''}",
        f"tcgen05.relinquish_alloc_permit.cta_group::{group}.sync.aligned;",
        doc="Give up this CTA's right to allocate TMEM again, so a CTA scheduled next on this SM can.")

    @twin(alloc)
    def _alloc(dst, ncols):
        t = _thread()
        t.launch.use_cta_group(group, "tcgen05.alloc", t)
        if group == 2:  # ptxas makes it a store and an arrive into the peer CTA's shared memory
            t.require_peer_running(_peer(t), f"tcgen05.alloc.cta_group::2 of {int(ncols)} columns", _site())
        sm = t.cta.tmem.sm
        if sm is not None and t.cta.tmem.free_block(int(ncols)) is None:
            # CTAs share this SM's TMEM (emu.on_sms): wait until another CTA frees enough columns
            start = t.clock
            t.scheduler.block(sm, lambda: t.cta.tmem.free_block(int(ncols)) is not None,
                              lambda: f"in tcgen05.alloc of {ncols} columns: the other CTAs on SM {sm.index} hold "
                                      f"{sum(o is not None for o in t.cta.tmem.owner) * 32} of its 512 TMEM columns")
            t.clock = max(t.clock, sm.freed_at)
            if t.lane == 0:
                t.event(t.warp_role(), "tmem.alloc", start, t.clock, detail=f"{int(ncols)} columns")

        def action(args):
            col = t.cta.tmem.allocate(int(ncols), t.warp)
            if col is None:
                raise TmemLifecycleError(f"{t.warp}: tcgen05.alloc of {ncols} columns blocks forever: only "
                                         f"{sum(o is None for o in t.cta.tmem.owner) * 32} columns are free")
            cta, off = t.cta.resolve(dst, 4, "tcgen05.alloc destination")
            cta.smem.store(off, np.array([col], dtype=np.uint32).view(np.uint8), t)
            t.cta.tmem_alloc_permit_used = True
            return col

        t.warp.collective(t, f"tcgen05.alloc.cta_group::{group}", (int(dst), int(ncols)), action=action)
        t.advance()

    @twin(dealloc)
    def _dealloc(taddr, ncols):
        t = _thread()
        t.launch.use_cta_group(group, "tcgen05.dealloc", t)
        sid = _site()
        if group == 2:
            t.require_peer_running(_peer(t), "tcgen05.dealloc.cta_group::2", sid)
        t.tcgen05_op("tcgen05.dealloc", sid, TC_DEALLOC)

        def action(args):
            col = int(taddr) & 0xFFFF
            for mma in t.cta.pending_mma_writes:
                if mma.d_col < col + ncols and col < mma.d_col + mma.n:
                    raise TmemLifecycleError(
                        f"{t.warp} freed TMEM columns {col}..{col + ncols - 1} of CTA {t.cta.rank_text()} while "
                        f"{mma.description} still writes them. Wait for the last commit (and, for a CTA pair, a "
                        f"cluster barrier) before tcgen05.dealloc.")
            tmem_rules.check_dealloc(t.warp, t.cta, col, int(ncols), sid, pair=group == 2)
            t.cta.tmem.free(col, int(ncols), t.warp)
            if t.cta.tmem.sm is not None:
                t.cta.tmem.sm.released(t.clock)

        t.warp.collective(t, f"tcgen05.dealloc.cta_group::{group}", (int(taddr), int(ncols)), action=action)
        t.advance()

    @twin(relinquish)
    def _relinquish():
        t = _thread()
        t.launch.use_cta_group(group, "tcgen05.relinquish_alloc_permit", t)

        def action(args):
            t.cta.tmem.relinquished = True

        t.warp.collective(t, f"tcgen05.relinquish_alloc_permit.cta_group::{group}", (), action=action)

    return alloc, dealloc, relinquish


tmem_alloc, tmem_dealloc, tmem_relinquish = _alloc_ops(1)
tmem_alloc_cg2, tmem_dealloc_cg2, tmem_relinquish_cg2 = _alloc_ops(2)


# -- MMA and commit --------------------------------------------------------------------------------
_MMA = ("{{{{\n .reg .pred p;\n setp.ne.b32 p, {{accumulate}}, 0;\n"
        " tcgen05.mma.cta_group::{group}.kind::f16 [{{d_tmem}}], {{a_desc}}, {{b_desc}}, {{idesc}}, p;\n}}}}")


def _mma_twin(group):
    def mma(d_tmem, a_desc, b_desc, idesc, accumulate):
        issue_mma(group, lambda t, ctas: Mma(t, ctas, d_tmem, a_desc, b_desc, idesc, accumulate, group))

    return mma


tcgen05_mma = asm_op(
    "tcgen05_mma", _MMA.format(group=1),
    operands=(("d_tmem", u32), ("a_desc", u64), ("b_desc", u64), ("idesc", u32), ("accumulate", u32)),
    doc="One thread issues D[M x N] (+)= A[M x 16] . B[N x 16]^T (kind::f16, fp32 or fp16 accumulator in "
        "TMEM at ``d_tmem``). ``a_desc``/``b_desc`` are shared-memory matrix descriptors, ``idesc`` the "
        "instruction descriptor. ``accumulate`` = 0 overwrites D (first K step), 1 adds to it.")
tcgen05_mma.twin = _mma_twin(1)

tcgen05_mma_cg2 = asm_op(
    "tcgen05_mma_cg2", _MMA.format(group=2),
    operands=(("d_tmem", u32), ("a_desc", u64), ("b_desc", u64), ("idesc", u32), ("accumulate", u32)),
    doc="The CTA-pair MMA, issued by one thread of the even CTA: A rows and B rows come half from each "
        "CTA's shared memory (same offsets), and each CTA's TMEM receives its M/2 rows of D.")
tcgen05_mma_cg2.twin = _mma_twin(2)


_MMA_LO = ("{{{{\n .reg .pred p;\n .reg .b64 da, db;\n mov.b64 da, {{{{{{a_lo}}, {{desc_hi}}}}}};\n"
           " mov.b64 db, {{{{{{b_lo}}, {{desc_hi}}}}}};\n setp.ne.b32 p, {{accumulate}}, 0;\n"
           " tcgen05.mma.cta_group::{group}.kind::f16 [{{d_tmem}}], da, db, {{idesc}}, p;\n}}}}")


def _mma_lo_twin(group):
    full = _mma_twin(group)

    def mma(d_tmem, a_lo, b_lo, desc_hi, idesc, accumulate):
        hi = int(desc_hi) << 32
        full(d_tmem, np.uint64(hi | int(a_lo) & 0xFFFFFFFF), np.uint64(hi | int(b_lo) & 0xFFFFFFFF), idesc, accumulate)

    return mma


tcgen05_mma_lo = asm_op(
    "tcgen05_mma_lo", _MMA_LO.format(group=1),
    operands=(("d_tmem", u32), ("a_lo", u32), ("b_lo", u32), ("desc_hi", u32), ("idesc", u32),
              ("accumulate", u32)),
    doc="tcgen05_mma with the two matrix descriptors given as 32-bit low words and one shared high word "
        "``desc_hi`` (``mov.b64 {lo, hi}`` in PTX): when the high word (stride, swizzle) is a constant, the "
        "loop around the MMAs does only 32-bit adds on the low words (start addresses).")
tcgen05_mma_lo.twin = _mma_lo_twin(1)

tcgen05_mma_cg2_lo = asm_op(
    "tcgen05_mma_cg2_lo", _MMA_LO.format(group=2),
    operands=(("d_tmem", u32), ("a_lo", u32), ("b_lo", u32), ("desc_hi", u32), ("idesc", u32),
              ("accumulate", u32)),
    doc="The CTA-pair MMA (tcgen05_mma_cg2) with descriptors given as low words and a shared high word, "
        "as tcgen05_mma_lo.")
tcgen05_mma_cg2_lo.twin = _mma_lo_twin(2)


def _commit(bar, mask, group):
    t = _thread()
    t.launch.use_cta_group(group, "tcgen05.commit", t)
    if mask is None:
        bars = [t.cta.mbarrier(bar, "tcgen05.commit")]
    else:
        _, off = t.cta.resolve(bar, 8, "tcgen05.commit")
        bars = []
        for rank in range(16):
            if int(mask) >> rank & 1:
                if rank >= t.cta.cluster.size:
                    raise MemoryFault(f"{t}: commit multicast mask 0x{int(mask):x} names CTA rank {rank}, but the "
                                      f"cluster has {t.cta.cluster.size}")
                peer = t.cta.cluster.ctas[rank]
                bars.append(peer.mbarrier(peer.smem.window_address(off), "tcgen05.commit (multicast)"))
    for b in bars:
        b.signal_from(t)
    op = Commit(t, bars, list(t.unretired_mma))
    t.unretired_mma = []
    op.predecessor = t.last_mma
    t.scheduler.submit(op)
    t.event(t.warp_role(), "commit", t.clock, t.clock + 1, barrier=bars[0].name,
            extra={"bar_ctas": [b.cta.linear for b in bars],
                   "ptx": "tcgen05.commit" + ("" if mask is None else f" (multicast to CTA ranks of mask 0b{int(mask):b})")})
    t.advance()


tcgen05_commit = asm_op(
    "tcgen05_commit", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [{bar}];",
    operands=(("bar", u32),),
    doc="Make the mbarrier at ``bar`` receive one arrival when every earlier tcgen05.mma of this thread "
        "has completed (its operands read, its results in TMEM).")
tcgen05_commit.twin = lambda bar: _commit(bar, None, 1)

tcgen05_commit_cg2_multicast = asm_op(
    "tcgen05_commit_cg2_multicast",
    "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [{bar}], {mask};",
    operands=(("bar", u32), ("mask", u16)),
    doc="The CTA-pair commit: one arrival on the mbarrier at the same offset ``bar`` in every CTA whose "
        "rank bit is set in ``mask`` (0b11: both CTAs of the pair).")
tcgen05_commit_cg2_multicast.twin = lambda bar, mask: _commit(bar, int(mask), 2)


# -- loads from TMEM ---------------------------------------------------------------------------------
def _ld_op(n):
    regs = ", ".join(f"{{r{i}}}" for i in range(n))
    op = asm_op(
        f"tmem_ld_32x32b_x{n}",
        f"tcgen05.ld.sync.aligned.32x32b.x{n}.b32 {{{{{regs}}}}}, [{{taddr}}];",
        results=tuple((f"r{i}", f32) for i in range(n)), operands=(("taddr", u32),),
        doc=f"Warp-collective load of {n} consecutive 32-bit TMEM columns starting at ``taddr``: lane i of "
            f"the warp gets TMEM lane (lane of taddr) + i. A warp may only touch its lane quarter, "
            f"32*(warp % 4) .. +31. Asynchronous: tcgen05.wait::ld before using the values.")

    @twin(op)
    def _ld(taddr):
        t = _thread()
        taddr = int(taddr)
        lane0, col0 = taddr >> 16, taddr & 0xFFFF
        quarter = 32 * (t.warp.index % 4)
        if lane0 != quarter:
            raise LaneQuarterViolation(
                f"{t.warp} executed tcgen05.ld.32x32b at TMEM lane {lane0}; warp {t.warp.index} may only access "
                f"lanes {quarter}..{quarter + 31} (warp id % 4 = {t.warp.index % 4}). Put 32*(warp%4) in the "
                f"address's lane field (bits 16-31).")
        cta = t.cta
        sid = _site()
        t.tcgen05_op("tcgen05.ld", sid, TC_READ)

        def action(args):
            tmem_rules.check_allocated(t.warp, cta, col0, n, "tcgen05.ld", sid)
            for mma in cta.pending_mma_writes:
                if mma.d_col < col0 + n and col0 < mma.d_col + mma.n:
                    raise TmemHazard(
                        f"{t.warp} loads TMEM columns {col0}..{col0 + n - 1} while {mma.description} has not "
                        f"completed. Wait on the barrier its commit signals (then tcgen05.fence::after_thread_sync) "
                        f"before tcgen05.ld.")
            tmem_rules.check_ld(t.warp, cta, lane0, col0, n, sid)
            load = tmem_rules.PendingLoad(lane0, col0, n, sid)
            t.warp.outstanding_ld.append(load)
            block = cta.tmem.cells[lane0:lane0 + 32, col0:col0 + n].tolist()
            threads = t.warp.threads
            return {lane: tmem_rules.LoadedRegisters(block[lane], load, threads[lane]) for lane in range(32)}

        start = t.clock
        vals = t.warp.collective(t, f"tcgen05.ld.32x32b.x{n}", taddr, action=action)
        t.clock += costmodel.of(t).tmem_ld_cycles_per_32_cols * max(1, n // 32)
        if t.lane == 0:
            t.event(t.warp_role(), "tmem.ld", start, t.clock, detail=f"cols {col0}..{col0 + n - 1}")
        return vals

    return op


tmem_ld_32x32b_x8 = _ld_op(8)
tmem_ld_32x32b_x16 = _ld_op(16)
tmem_ld_32x32b_x32 = _ld_op(32)
tmem_ld_32x32b_x64 = _ld_op(64)

tmem_wait_ld = asm_op(
    "tmem_wait_ld", "tcgen05.wait::ld.sync.aligned;",
    doc="Wait until every earlier tcgen05.ld of this thread has completed.")


@twin(tmem_wait_ld)
def _tmem_wait_ld():
    t = _thread()

    def action(args):
        for load in t.warp.outstanding_ld:
            load.waited = True
        t.warp.outstanding_ld = []

    t.warp.collective(t, "tcgen05.wait::ld", (), action=action)
    t.advance()
