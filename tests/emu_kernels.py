"""Small purpose-built kernels for the emulator's tests (tests/test_emu_semantics.py,
tests/test_emu_bugs.py).

Each kernel is plain Python written like a chapter kernel (``numba.cuda`` + ``gemm_kernels.ptx``), so
the emulator rebinds it exactly as it rebinds the chapters. They are run with ``gemm_kernels.emu.run``
only (never compiled). Most take an integer ``bug``: 0 is the correct kernel, each other value commits
exactly one bug from the catalogue (named where the kernel branches on it).

Dynamic shared memory (offsets from the dynamic base, which the emulator puts at 0x400, so the 1024-B
aligned offsets below are 1024-B aligned absolute addresses as the 128B swizzle needs):

  BAR(i)   8 * i         mbarriers (32 of them)
  SLOT     256           the TMEM address written by tcgen05.alloc
  DATA     512           512 bytes of scratch words
  A_BUF    1024          16 KiB: a 128 x 64 fp16 box
  B_BUF    17408         32 KiB: up to 256 x 64 fp16
  STAGE    50176         16 KiB: a staging box for TMA stores
"""
import numpy as np
from numba import cuda, uint8, uint32

from gemm_kernels import emu, layouts, ptx
from gemm_kernels.kernels.tile_copy import copy_tile_sw128

SLOT = 256
DATA = 512
A_BUF = 1024
B_BUF = A_BUF + 16384
STAGE = B_BUF + 32768
SHARED_BYTES = STAGE + 16384

#: where tensor maps "live" in global memory (any distinct addresses will do on the emulator)
TMAP_A = 0x7F00_0000_0000
TMAP_B = TMAP_A + 128
TMAP_C = TMAP_A + 256

BOX_BYTES = 128 * 64 * 2


def BAR(i):
    return 8 * i


def bar_names(*names):
    """names=[...] entries for mbarriers 0, 1, ... in order."""
    return [(n, BAR(i), 8) for i, n in enumerate(names)]


BUFFER_NAMES = [("TMEM slot", SLOT, 4), ("data", DATA, 512), ("A tile", A_BUF, 16384),
                ("B tile", B_BUF, 32768), ("staging", STAGE, 16384)]


def run(kernel, args, *, block, grid=1, cluster=1, policy="lazy", seed=0, names=(), maps=None):
    """emu.run with this module's shared-memory size and buffer names."""
    return emu.run(kernel, grid, block, args, cluster=cluster, shared_bytes=SHARED_BYTES, policy=policy, seed=seed,
                   names=list(names) + BUFFER_NAMES, tensor_maps=maps)


def tmaps(*specs):
    """specs: (address, array, box_rows, box_cols[, swizzle]) -> {address: TensorMapModel}."""
    out = {}
    for spec in specs:
        addr, arr, rows, cols = spec[:4]
        swz = spec[4] if len(spec) > 4 else "128B"
        out[addr] = emu.TensorMapModel(arr, rows, cols, swz, name=f"tmap@{addr - TMAP_A:#x}")
    return out


def sw128(addr):
    return layouts.smem_desc_sw128_kmajor_dev(addr, 1024)


# ================================================================================================
# mbarriers
# ================================================================================================
def k_fresh_parity(out):
    """64 threads. After init, a wait on parity 1 passes at once (it names the phase "before" phase
    0); a wait on parity 0 blocks until phase 0 completes.
    out[0]: thread 0 writes 42 before arriving; out[1 + lane]: what warp 1 read after its parity-0
    wait; out[40]: 1 once warp 1 passed its parity-1 wait (before anybody arrived)."""
    smem = cuda.shared.array(0, uint8)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    bar, go = base + BAR(0), base + BAR(1)
    if tid == 0:
        ptx.mbarrier_init(bar, 1)
        ptx.mbarrier_init(go, 32)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        ptx.mbarrier_wait(go, 0)  # only after warp 1's parity-1 wait returned
        out[0] = 42
        ptx.mbarrier_arrive(bar)
    elif tid >= 32:
        ptx.mbarrier_wait(bar, 1)  # passes at once: nobody has arrived yet
        out[40] = 1
        ptx.mbarrier_arrive(go)
        ptx.mbarrier_wait(bar, 0)  # blocks until thread 0 arrived
        out[1 + tid - 32] = out[0]


def k_ring(out, rounds, stages, bug):
    """A producer thread hands ``rounds`` values to a consumer warp through a ring of ``stages``
    slots with full/empty mbarriers (full: 1 arrival, empty: 32). out[32*r + lane] = 7*r + 1.
    bug 1: the producer waits on 'empty' with the consumer's parity (phase instead of phase ^ 1):
    both sides wait forever (Deadlock).
    bug 2: all 32 lanes of the producer warp run the loop and wait on 'empty', only lane 0 produces:
    nothing keeps lanes 1-31 in step with lane 0, and a lane that falls two phases behind waits on a
    parity that now names the current phase instead of the one it means (a hang when it happens).
    bug 3: lane 31 of the consumer warp stops arriving on 'empty' from round 2 on: 'empty' lacks one of
    its 32 arrivals, the producer waits on it forever and the consumers starve on 'full' (Deadlock)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    lane = tid % 32
    if tid == 0:
        for s in range(stages):
            ptx.mbarrier_init(base + BAR(s), 1)  # full[s]
            ptx.mbarrier_init(base + BAR(8 + s), 32)  # empty[s]
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    stage = 0
    phase = 0
    if tid == 0 or (bug == 2 and tid < 32):
        for r in range(rounds):
            ptx.mbarrier_wait(base + BAR(8 + stage), phase if bug == 1 else phase ^ 1)
            if tid == 0:
                smem32[DATA // 4 + stage] = 7 * r + 1
                ptx.mbarrier_arrive(base + BAR(stage))
            stage += 1
            if stage == stages:
                stage = 0
                phase ^= 1
    elif tid >= 32:
        for r in range(rounds):
            ptx.mbarrier_wait(base + BAR(stage), phase)
            out[32 * r + lane] = smem32[DATA // 4 + stage]
            if not (bug == 3 and lane == 31 and r >= 2):
                ptx.mbarrier_arrive(base + BAR(8 + stage))
            stage += 1
            if stage == stages:
                stage = 0
                phase ^= 1


RING_NAMES = bar_names(*[f"full[{s}]" for s in range(8)], *[f"empty[{s}]" for s in range(8)])


def k_arrivals(out, count, bug):
    """Warp 1 arrives on a barrier that thread 0 waits on; init count ``count``.
    bug 1: every lane of warp 1 arrives on a barrier initialised for ONE arrival (count should be 32,
    or only one lane should arrive): ArrivalMismatch. bug 2: re-initialise a barrier that completed a
    phase without mbarrier.inval (EmulatorError)."""
    smem = cuda.shared.array(0, uint8)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    bar = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(bar, count)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid >= 32:
        ptx.mbarrier_arrive(bar)
    if tid == 0:
        ptx.mbarrier_wait(bar, 0)
        out[0] = 1
        if bug != 1:
            if bug != 2:
                ptx.mbarrier_inval(bar)
            ptx.mbarrier_init(bar, 1)  # reuse the 8 bytes for a new barrier
            out[1] = 1


def k_ready_rounds(out, rounds, bug):
    """Warp 1 arrives on 'ready' (count 32) once per round; thread 0 waits on each of its phases, writes
    out[r] = r + 1 and arrives on 'go' (count 1), which warp 1 waits on before its next round.
    bug 1: from round 1 on, lane 5 of warp 1 executes its arrive twice (ArrivalMismatch: a second
    arrival in one phase of a barrier whose last phase had one arrival from each of 32 threads).
    bug 2: from round 1 on, lane 5 skips its wait on 'go' and runs ahead into the next round's
    arrival (the same report, naming the missing wait as the likely cause)."""
    smem = cuda.shared.array(0, uint8)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    ready, go = base + BAR(0), base + BAR(1)
    if tid == 0:
        ptx.mbarrier_init(ready, 32)
        ptx.mbarrier_init(go, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        for r in range(rounds):
            ptx.mbarrier_wait(ready, r & 1)
            out[r] = r + 1
            ptx.mbarrier_arrive(go)
    elif tid >= 32:
        for r in range(rounds):
            ptx.mbarrier_arrive(ready)
            if bug == 1 and tid == 37 and r >= 1:
                ptx.mbarrier_arrive(ready)
            if not (bug == 2 and tid == 37 and r >= 1):
                ptx.mbarrier_wait(go, r & 1)


def k_no_init(out):
    """Thread 0 waits on a barrier nobody initialised (MemoryFault)."""
    smem = cuda.shared.array(0, uint8)
    base = ptx.shared_addr(smem)
    if cuda.threadIdx.x == 0:
        ptx.mbarrier_wait(base + BAR(3), 0)
        out[0] = 1


# ================================================================================================
# TMA
# ================================================================================================
def k_tma_load(out32, c0, c1, nbytes, mode, nwords):
    """Thread 0 announces ``nbytes`` on 'tma_bar' and loads the box of TMAP_A at (c0, c1) into A_BUF;
    then all 128 threads copy the first ``nwords`` 32-bit words of A_BUF to out32.
    mode 0: arrive.expect_tx(nbytes) before the copy; 1: expect_tx(nbytes) (no arrival) before the copy,
    a plain arrive after it; 2: expect_tx(nbytes/2) then arrive.expect_tx(nbytes/2); 3: arrive.expect_tx
    issued AFTER the copy (the bytes may land first: the tx-count goes negative for a while)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    bar = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(bar, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        if mode == 0:
            ptx.mbarrier_arrive_expect_tx(bar, nbytes)
        elif mode == 1:
            ptx.mbarrier_expect_tx(bar, nbytes)
        elif mode == 2:
            ptx.mbarrier_expect_tx(bar, nbytes // 2)
            ptx.mbarrier_arrive_expect_tx(bar, nbytes - nbytes // 2)
        ptx.tma_load_2d(base + A_BUF, TMAP_A, c0, c1, bar)
        if mode == 1:
            ptx.mbarrier_arrive(bar)
        elif mode == 3:
            ptx.mbarrier_arrive_expect_tx(bar, nbytes)
    ptx.mbarrier_wait(bar, 0)
    for i in range(tid, nwords, 128):
        out32[i] = smem32[A_BUF // 4 + i]


def k_tma_store(out_first, out_second, c0, c1, s0, s1, nbytes, bug):
    """Load the box of TMAP_A at (c0, c1) into the staging buffer, TMA-store it to TMAP_B at (s0, s1);
    then every thread adds 1 to its elements of the staging box (ordinary stores, fenced) and thread 0
    stores it again to TMAP_C at (s0, s1). Bulk groups: commit, wait_group.read 0 before the rewrite.
    bug 1: no cp.async.bulk.wait_group.read before rewriting the staging buffer (SharedMemoryHazard,
    when the first store has not read it yet). bug 2: no fence.proxy.async after the ordinary stores
    (MissingProxyFence at the second store). bug 3: no wait_group.read after the last store: the
    thread exits while the store may still read the staging buffer."""
    smem16 = cuda.shared.array(0, np.uint16)
    base = ptx.shared_addr(smem16)
    tid = cuda.threadIdx.x
    bar = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(bar, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(bar, nbytes)
        ptx.tma_load_2d(base + STAGE, TMAP_A, c0, c1, bar)
    ptx.mbarrier_wait(bar, 0)
    if tid == 0:
        ptx.tma_store_2d(TMAP_B, s0, s1, base + STAGE)
        ptx.bulk_commit_group()
        if bug != 1:
            ptx.bulk_wait_group_read0()
    cuda.syncthreads()
    for i in range(tid, nbytes // 2, 128):
        smem16[STAGE // 2 + i] = smem16[STAGE // 2 + i] + 1
    if bug != 2:
        ptx.fence_proxy_async()
    cuda.syncthreads()
    if tid == 0:
        ptx.tma_store_2d(TMAP_C, s0, s1, base + STAGE)
        ptx.bulk_commit_group()
        if bug != 3:
            ptx.bulk_wait_group_read0()
    out_first[tid] = 1
    out_second[tid] = 1


def k_stale(out32, bug):
    """Thread 0 loads two 128 x 64 chunks of TMAP_A through one buffer and one barrier, waiting on
    the barrier after each; out32[kc] = first word of chunk kc.
    bug 1: the phase bit is not flipped after the first wait (the second wait uses parity 0 again)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    bar = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(bar, 1)
        ptx.fence_mbarrier_init()
        phase = 0
        for kc in range(2):
            ptx.mbarrier_arrive_expect_tx(bar, BOX_BYTES)
            ptx.tma_load_2d(base + A_BUF, TMAP_A, kc * 64, 0, bar)
            ptx.mbarrier_wait(bar, phase)
            out32[kc] = smem32[A_BUF // 4]
            ptx.fence_proxy_async()  # the ordinary load before the next TMA load's write of the buffer (PTX ISA)
            if bug != 1:
                phase ^= 1


# ================================================================================================
# tensor core: one CTA
# ================================================================================================
def _epilogue(out, tmem, warp, lane, row0, col0, ncols, lane_base):
    """Warp reads ncols accumulator columns (from col0) of TMEM lanes lane_base..+31 into out rows
    row0 + lane_base + lane."""
    for chunk in range(ncols // 32):
        v = ptx.tmem_ld_32x32b_x32(tmem + (lane_base << 16) + col0 + 32 * chunk)
        ptx.tmem_wait_ld()
        for i in range(32):
            out[row0 + (lane_base % 128) + lane, col0 + 32 * chunk + i] = v[i]


def k_mma(out, idesc, n, nk, chains, acc2, desc_clear, quarter_bug):
    """One tile D[128, n] from TMAP_A (128 x 64 box at (0, 0)) and TMAP_B (n x 64 box): thread 0 issues
    ``nk`` K=16 MMAs (accumulate from the second), commits to 'mma_done'; with ``chains`` = 2 it waits
    and issues the same ``nk`` MMAs again, the first with accumulate = ``acc2``. Every warp (4 or 8)
    then reads its lane quarter: warps 0-3 columns [0, n/2) ... (8 warps) or all n columns (4 warps).
    desc_clear: bits cleared from A's matrix descriptor (DescriptorError tests).
    quarter_bug: use lane base 32*warp instead of 32*(warp % 4) (LaneQuarterViolation for warps >= 4)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    nwarps = cuda.blockDim.x // 32
    tma_bar, mma_done = base + BAR(0), base + BAR(1)
    ncols = 256 if n > 128 else 128
    if tid == 0:
        ptx.mbarrier_init(tma_bar, 1)
        ptx.mbarrier_init(mma_done, 1)
        ptx.fence_mbarrier_init()
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, ncols)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(tma_bar, BOX_BYTES + n * 128)
        ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 0, tma_bar)
        ptx.tma_load_2d(base + B_BUF, TMAP_B, 0, 0, tma_bar)
        ptx.mbarrier_wait(tma_bar, 0)
        ptx.tcgen05_fence_after()
        for c in range(chains):
            if c > 0:
                ptx.mbarrier_wait(mma_done, c - 1)
                ptx.tcgen05_fence_after()
            for k in range(nk):
                ad = sw128(base + A_BUF + 32 * k)
                ad = ad - (ad & desc_clear)
                acc = k > 0 or (c > 0 and acc2 == 1)
                ptx.tcgen05_mma(tmem, ad, sw128(base + B_BUF + 32 * k), idesc, 1 if acc else 0)
            ptx.tcgen05_commit(mma_done)
    for c in range(chains):
        if tid != 0 or c == chains - 1:  # thread 0 consumed the earlier phases above
            ptx.mbarrier_wait(mma_done, c & 1)
    ptx.tcgen05_fence_after()
    lane_base = 32 * warp if quarter_bug else 32 * (warp % 4)
    if nwarps == 8:
        _epilogue(out, tmem, warp, lane, 0, (warp // 4) * (n // 2), n // 2, lane_base)
    else:
        _epilogue(out, tmem, warp, lane, 0, 0, n, lane_base)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, ncols)


MMA_NAMES = bar_names("tma_bar", "mma_done")


def k_mma_reuse(out, bug):
    """D[128,128] = A[:, :128] @ B[:, :128].T through ONE stage (A_BUF, B_BUF): two K chunks of 64,
    barriers 'full' (TMA bytes), 'empty' (commit after a chunk's MMAs), 'mma_done' (last commit).
    bug 1: the second chunk's TMA loads are issued without waiting on 'empty' (the MMAs of chunk 0 may
           still read the buffers): SharedMemoryHazard at the TMA issue.
    bug 2: the first chunk's MMAs are issued without waiting on 'full': SharedMemoryHazard at the MMA.
    bug 3: the epilogue waits with __syncthreads() instead of on 'mma_done' (a CTA barrier orders threads,
           not the tensor core's work): TmemHazard at tcgen05.ld.
    bug 4: warp 0 frees TMEM right after the last commit, without waiting on 'mma_done':
           TmemLifecycleError at tcgen05.dealloc."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    full, empty, mma_done = base + BAR(0), base + BAR(1), base + BAR(2)
    if tid == 0:
        ptx.mbarrier_init(full, 1)
        ptx.mbarrier_init(empty, 1)
        ptx.mbarrier_init(mma_done, 1)
        ptx.fence_mbarrier_init()
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 128)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    idesc = layouts.instr_desc_dev(128, 128, 0, 0, 1, 0, 0)
    if tid == 0:
        for kc in range(2):
            if kc > 0 and bug != 1:
                ptx.mbarrier_wait(empty, kc - 1)
            ptx.mbarrier_arrive_expect_tx(full, 2 * BOX_BYTES)
            ptx.tma_load_2d(base + A_BUF, TMAP_A, 64 * kc, 0, full)
            ptx.tma_load_2d(base + B_BUF, TMAP_B, 64 * kc, 0, full)
            if not (bug == 2 and kc == 0):
                ptx.mbarrier_wait(full, kc)
            ptx.tcgen05_fence_after()
            for k in range(4):
                ptx.tcgen05_mma(tmem, sw128(base + A_BUF + 32 * k), sw128(base + B_BUF + 32 * k), idesc,
                                1 if (kc > 0 or k > 0) else 0)
            ptx.tcgen05_commit(mma_done if kc == 1 else empty)
    if bug == 4:
        if warp == 0:
            ptx.tcgen05_fence_after()
            ptx.tmem_relinquish()
            ptx.tmem_dealloc(tmem, 128)
        return
    if bug == 3:
        cuda.syncthreads()  # orders the threads, not the tensor core's work
    else:
        ptx.mbarrier_wait(mma_done, 0)
    ptx.tcgen05_fence_after()
    _epilogue(out, tmem, warp, lane, 0, 0, 128, 32 * warp)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 128)


REUSE_NAMES = bar_names("full", "empty", "mma_done")


def k_acc_reuse(out, bug):
    """Two tiles through one TMEM accumulator: warp 4 (lane 0) issues each tile's 4 MMAs after
    'acc_empty' (4 arrivals: lane 0 of each epilogue warp) and commits to 'acc_full'; warps 0-3 read
    the accumulator (out[t] gets tile t), then hand it back and meet at named barrier 1.
    Tile t = A[:, 64t:64t+64] @ B[:, 64t:64t+64].T (both chunks are loaded up front).
    bug 1: the last tcgen05.ld's wait::ld comes after the handoff
    (after the arrive on 'acc_empty' and the named barrier): the next tile's MMA is issued while the
    load is outstanding (TmemHazard at the MMA).
    bug 2: the first MMA of tile 0 accumulates into fresh TMEM (UninitializedRead).
    bug 3: the readers omit tcgen05.fence::after_thread_sync after waiting on 'acc_full'.
    bug 4: the readers omit tcgen05.fence::before_thread_sync before arriving on 'acc_empty'.
    bug 5: the readers use a tcgen05.ld's registers before tcgen05.wait::ld.
    bug 6: warp 0 frees TMEM right after its own reads of the last tile, before the named barrier
    that orders the other readers' loads before it.
    bug 7: tile 1's B chunk is never loaded: its MMAs read shared memory nothing wrote.
    bug 8: no fence.mbarrier_init after the inits: the TMA unit may not see the barrier initialised."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    full, acc_full, acc_empty = base + BAR(0), base + BAR(1), base + BAR(2)
    if tid == 0:
        ptx.mbarrier_init(full, 1)
        ptx.mbarrier_init(acc_full, 1)
        ptx.mbarrier_init(acc_empty, 4)
        if bug != 8:
            ptx.fence_mbarrier_init()
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 128)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    idesc = layouts.instr_desc_dev(128, 128, 0, 0, 1, 0, 0)
    if warp == 4:
        if lane == 0:
            # both tiles' operands up front: chunk t of A at A_t, of B at B_t
            ptx.mbarrier_arrive_expect_tx(full, (3 if bug == 7 else 4) * BOX_BYTES)
            ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 0, full)
            ptx.tma_load_2d(base + B_BUF, TMAP_B, 0, 0, full)
            ptx.tma_load_2d(base + STAGE, TMAP_A, 64, 0, full)
            if bug != 7:
                ptx.tma_load_2d(base + B_BUF + BOX_BYTES, TMAP_B, 64, 0, full)
            ptx.mbarrier_wait(full, 0)
            for t in range(2):
                a_t = base + (STAGE if t else A_BUF)
                b_t = base + B_BUF + t * BOX_BYTES
                ptx.mbarrier_wait(acc_empty, (t & 1) ^ 1)
                ptx.tcgen05_fence_after()
                for k in range(4):
                    ptx.tcgen05_mma(tmem, sw128(a_t + 32 * k), sw128(b_t + 32 * k), idesc,
                                    1 if k > 0 or (bug == 2 and t == 0) else 0)
                ptx.tcgen05_commit(acc_full)
    else:
        vals = cuda.local.array((4, 32), np.float32)
        for t in range(2):
            ptx.mbarrier_wait(acc_full, t & 1)
            if bug != 3:
                ptx.tcgen05_fence_after()
            for chunk in range(4):
                v = ptx.tmem_ld_32x32b_x32(tmem + ((32 * warp) << 16) + 32 * chunk)
                if bug == 1 and chunk == 3:
                    break  # the last load's wait comes after the handoff
                if bug == 5:
                    vals[chunk, 0] = v[0]
                ptx.tmem_wait_ld()
                for i in range(32):
                    vals[chunk, i] = v[i]
            if bug != 4:
                ptx.tcgen05_fence_before()
            cuda.syncwarp()  # every lane's loads are ordered before lane 0's arrive for the warp
            if lane == 0:
                ptx.mbarrier_arrive(acc_empty)
            if bug == 6 and warp == 0 and t == 1:
                ptx.tcgen05_fence_after()
                ptx.tmem_relinquish()
                ptx.tmem_dealloc(tmem, 128)
            ptx.named_barrier_sync(1, 128)
            if bug == 1:
                ptx.tmem_wait_ld()
                for i in range(32):
                    vals[3, i] = v[i]
            for chunk in range(4):
                for i in range(32):
                    out[t, 32 * warp + lane, 32 * chunk + i] = vals[chunk, i]
    cuda.syncthreads()
    if warp == 0 and bug != 6:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 128)


ACC_NAMES = bar_names("full", "acc_full", "acc_empty")


def k_drain(out, bug):
    """Chapter 7's teardown in miniature (128 threads): thread 0 loads one stage, issues 4 MMAs and
    commits twice: to 'empty' (the stage may be refilled) and then to 'acc_full' (the accumulator is
    ready); all 4 warps wait on 'acc_full' and read the accumulator. Bug 0 ends with the producer's
    tail: thread 0 waits on 'empty' too before the CTA tears down.
    bug 1: no tail. Nobody waits on 'empty', so its commit's arrival is not ordered before the exit
           (the wait on 'acc_full' does not order it: the PTX ISA does not order two commits' arrivals).
    bug 2: the tail, but thread 0 also prefetches a box on 'spare' that nobody waits for: the TMA
           load's complete_tx is not ordered before the exit."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    full, empty, acc_full, spare = base + BAR(0), base + BAR(1), base + BAR(2), base + BAR(3)
    if tid == 0:
        ptx.mbarrier_init(full, 1)
        ptx.mbarrier_init(empty, 1)
        ptx.mbarrier_init(acc_full, 1)
        ptx.mbarrier_init(spare, 1)
        ptx.fence_mbarrier_init()
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 128)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    idesc = layouts.instr_desc_dev(128, 128, 0, 0, 1, 0, 0)
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(full, 2 * BOX_BYTES)
        ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 0, full)
        ptx.tma_load_2d(base + B_BUF, TMAP_B, 0, 0, full)
        if bug == 2:
            ptx.mbarrier_arrive_expect_tx(spare, BOX_BYTES)
            ptx.tma_load_2d(base + STAGE, TMAP_A, 64, 0, spare)
        ptx.mbarrier_wait(full, 0)
        ptx.tcgen05_fence_after()
        for k in range(4):
            ptx.tcgen05_mma(tmem, sw128(base + A_BUF + 32 * k), sw128(base + B_BUF + 32 * k), idesc,
                            1 if k > 0 else 0)
        ptx.tcgen05_commit(empty)
        ptx.tcgen05_commit(acc_full)
    ptx.mbarrier_wait(acc_full, 0)
    ptx.tcgen05_fence_after()
    _epilogue(out, tmem, warp, lane, 0, 0, 128, 32 * warp)
    if tid == 0 and bug != 1:
        ptx.mbarrier_wait(empty, 0)  # the producer's tail
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 128)


DRAIN_NAMES = bar_names("full", "empty", "acc_full", "spare")


def k_proxy_fence(a, b, d, bug):
    """Step 1's data path: all 128 threads copy A and B (128 x 64, from global) into 128B-swizzled
    shared memory with ordinary stores, then one thread issues 4 MMAs. bug 1: no fence.proxy.async
    between the stores and the CTA barrier (MissingProxyFence at the MMA)."""
    smem = cuda.shared.array(0, uint8)
    smem16 = cuda.shared.array(0, np.float16)
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    mma_done = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(mma_done, 1)
        ptx.fence_mbarrier_init()
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 128)
    copy_tile_sw128(smem16, A_BUF // 2, a, 0, 0, tid, 128)
    copy_tile_sw128(smem16, B_BUF // 2, b, 0, 0, tid, 128)
    if bug != 1:
        ptx.fence_proxy_async()
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    if tid == 0:
        ptx.tcgen05_fence_after()
        for k in range(4):
            ptx.tcgen05_mma(tmem, sw128(base + A_BUF + 32 * k), sw128(base + B_BUF + 32 * k),
                            layouts.instr_desc_dev(128, 128, 0, 0, 1, 0, 0), 1 if k > 0 else 0)
        ptx.tcgen05_commit(mma_done)
    ptx.mbarrier_wait(mma_done, 0)
    ptx.tcgen05_fence_after()
    _epilogue(d, tmem, warp, lane, 0, 0, 128, 32 * warp)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 128)


# ================================================================================================
# TMEM lifecycle, warp collectives, cta_group
# ================================================================================================
def k_tmem_life(out, bug):
    """64 threads: warp 0 allocates 64 TMEM columns, everyone reads the slot, warp 0 relinquishes and
    frees. bug 1: no dealloc (leak). bug 2: warp 1 frees (another warp). bug 3: no relinquish.
    bug 4: tcgen05.relinquish_alloc_permit.cta_group::2 after a cta_group::1 alloc (CtaGroupMix).
    bug 5: only lanes 0-15 of warp 0 execute tcgen05.alloc (DivergentCollective)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    if warp == 0 and (bug != 5 or lane < 16):
        ptx.tmem_alloc(base + SLOT, 64)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    out[tid] = tmem
    cuda.syncthreads()
    if warp == (1 if bug == 2 else 0):
        if bug == 4:
            ptx.tmem_relinquish_cg2()
        elif bug != 3:
            ptx.tmem_relinquish()
        if bug != 1:
            ptx.tmem_dealloc(tmem, 64)


def k_collectives(out, bug):
    """64 threads; out[tid] = elect_sync() for both warps, then warp 0 reads 8 TMEM columns.
    bug 1: only lanes 0-15 of warp 1 execute elect.sync (the others skip it and exit).
    bug 2: lanes 0-15 of warp 1 execute elect.sync while lanes 16-31 execute __syncwarp.
    bug 3: warp 0's lanes give different TMEM addresses to tcgen05.ld (address + lane).
    bug 4: warp 0 reads TMEM columns that nothing wrote (UninitializedRead: fresh TMEM is garbage)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 32)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    if warp == 1 and bug in (1, 2):
        if lane < 16:
            out[tid] = ptx.elect_sync()
        elif bug == 2:
            cuda.syncwarp()
    else:
        out[tid] = ptx.elect_sync()
    if warp == 0:
        if bug >= 3:
            v = ptx.tmem_ld_32x32b_x8(tmem + (lane if bug == 3 else 0))
            ptx.tmem_wait_ld()
            out[64 + tid] = 1 if v[0] == 0.0 else 0
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 32)


def k_elect(out):
    """out[tid] = elect_sync() (any block size)."""
    out[cuda.threadIdx.x] = ptx.elect_sync()


def k_named(out, rounds, bug):
    """256 threads. Warps 0-1 produce into shared memory and bar.arrive(1, 128); warps 2-3
    bar.sync(1, 128), read, and bar.arrive(2, 128); the producers bar.sync(2, 128) before the next
    round. out[64 r + i] = 3 i + r. Meanwhile warps 4-7 meet ``rounds`` times at bar.sync(3, 128) and
    count in out[64 rounds + (warp - 4)].
    bug 1: warp 0 alone produces, with bar.arrive(1, 64), while warp 1 consumes with bar.sync(1, 96):
           one ID, two thread counts (NamedBarrierMismatch).
    bug 2: warps 4-5 and warps 6-7 are two groups that both use ID 3 with 64 threads, each meaning
           their own barrier (NamedBarrierMismatch: two groups share an ID)."""
    smem32 = cuda.shared.array(0, uint32)
    tid = cuda.threadIdx.x
    warp = tid // 32
    if bug == 1:
        if warp == 0:
            smem32[DATA // 4 + tid] = 3 * tid
            ptx.named_barrier_arrive(1, 64)
        elif warp == 1:
            ptx.named_barrier_sync(1, 96)
            out[tid - 32] = smem32[DATA // 4 + tid - 32]
        return
    if warp < 2:
        for r in range(rounds):
            if r > 0:
                ptx.named_barrier_sync(2, 128)
            smem32[DATA // 4 + tid] = 3 * tid + r
            ptx.named_barrier_arrive(1, 128)
    elif warp < 4:
        for r in range(rounds):
            ptx.named_barrier_sync(1, 128)
            out[64 * r + tid - 64] = smem32[DATA // 4 + tid - 64]
            if r < rounds - 1:
                ptx.named_barrier_arrive(2, 128)
    else:
        for r in range(rounds):
            if bug == 2:
                ptx.named_barrier_sync(3, 64)
            else:
                ptx.named_barrier_sync(3, 128)
            if tid % 32 == 0:
                out[64 * rounds + warp - 4] += 1


# ================================================================================================
# clusters
# ================================================================================================
def k_cluster_barrier(marks, seen, rounds):
    """A cluster of CTAs: each round every thread marks marks[r, gid], meets the cluster barrier,
    then counts the marks of round r (all must be there): seen[r, gid]."""
    tid = cuda.threadIdx.x
    gid = ptx.cluster_ctarank() * cuda.blockDim.x + tid
    total = ptx.cluster_nctarank() * cuda.blockDim.x
    for r in range(rounds):
        marks[r, gid] = 1
        ptx.cluster_arrive()
        ptx.cluster_wait()
        s = 0
        for j in range(total):
            s += marks[r, j]
        seen[r, gid] = s


def k_dsmem(out):
    """Two CTAs of a cluster: thread 0 of each writes 4 words into the PEER's shared memory through a
    mapa address (st.shared::cluster.v4) and arrives on the peer's 'mailbox' barrier (a remote
    arrival); every thread waits on its own mailbox and writes what landed to out[rank, tid, :].
    out[rank, 64, 0..1]: the mapa address and the local address."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    rank = ptx.cluster_ctarank()
    peer = rank ^ 1
    mailbox = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(mailbox, 1)
        ptx.fence_mbarrier_init()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if tid == 0:
        remote = ptx.mapa(base + DATA, peer)
        out[rank, 64, 0] = remote
        out[rank, 64, 1] = base + DATA
        v = 100 * (rank + 1)
        ptx.st_shared_v4(remote, v + 1, v + 2, v + 3, v + 4)
        ptx.mbarrier_arrive_cluster(ptx.mapa(mailbox, peer))
    ptx.mbarrier_wait_cluster(mailbox, 0)
    for i in range(4):
        out[rank, tid, i] = smem32[DATA // 4 + i]
    ptx.cluster_arrive()  # neither CTA exits while the peer may still touch its shared memory
    ptx.cluster_wait()


def k_mma_cg2(out, idesc, n, bug=0):
    """A CTA pair computes D[256, n] = A[256, 64] @ B[n, 64].T: CTA r loads A rows 128 r.. and B rows
    (n/2) r.. into its own shared memory; after a cluster barrier the even CTA issues 4 cta_group::2
    MMAs and commits to 'mma_done' in both CTAs (multicast 0b11); each CTA reads ITS 128 rows from
    ITS TMEM: out[128 rank + 32 warp + lane, :]. The even CTA also commits to its own 'spare' only
    (mask 0b01) and waits on it before the final cluster barrier, which orders that arrival before
    the odd CTA's exit too (a cta_group::2 commit needs both CTAs of the pair alive).
    bug 1: the even CTA waits on 'spare' after the final cluster barrier: the odd CTA may exit before
           the commit arrives (UndrainedArrival).
    bug 2: as 1, but after the final cluster barrier the even CTA first commits to the odd CTA's 'late'
           (mask 0b10), on which the odd CTA waits before it exits. That orders the odd CTA's exit after
           the 'late' arrival and after what the even thread did before issuing that commit, not after
           its wait on 'spare', which comes later (UndrainedArrival on 'spare'). An arrival on
           'bye' keeps the even CTA alive until the odd one has seen 'late'."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    rank = ptx.cluster_ctarank()
    tma_bar, mma_done, spare, late, bye = base + BAR(0), base + BAR(1), base + BAR(2), base + BAR(3), base + BAR(4)
    if tid == 0:
        ptx.mbarrier_init(tma_bar, 1)
        ptx.mbarrier_init(mma_done, 1)
        ptx.mbarrier_init(spare, 1)
        ptx.mbarrier_init(late, 1)
        ptx.mbarrier_init(bye, 1)
        ptx.fence_mbarrier_init()
    ptx.cluster_arrive()  # the peer runs: only then the pair's allocation (it writes into the peer)
    ptx.cluster_wait()
    if warp == 0:
        ptx.tmem_alloc_cg2(base + SLOT, 256)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    ptx.tcgen05_fence_after()
    tmem = smem32[SLOT // 4]
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(tma_bar, BOX_BYTES + (n // 2) * 128)
        ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 128 * rank, tma_bar)
        ptx.tma_load_2d(base + B_BUF, TMAP_B, 0, (n // 2) * rank, tma_bar)
        ptx.mbarrier_wait(tma_bar, 0)
    ptx.cluster_arrive()  # both CTAs' operands are in
    ptx.cluster_wait()
    if rank == 0 and tid == 0:
        ptx.tcgen05_fence_after()
        for k in range(4):
            ptx.tcgen05_mma_cg2(tmem, sw128(base + A_BUF + 32 * k), sw128(base + B_BUF + 32 * k), idesc,
                                1 if k > 0 else 0)
        ptx.tcgen05_commit_cg2_multicast(mma_done, 3)
        ptx.tcgen05_commit_cg2_multicast(spare, 1)
    ptx.mbarrier_wait_cluster(mma_done, 0)
    ptx.tcgen05_fence_after()
    _epilogue(out, tmem, warp, lane, 128 * rank, 0, n, 32 * warp)
    if rank == 0 and tid == 0 and bug == 0:
        ptx.mbarrier_wait(spare, 0)
    ptx.tcgen05_fence_before()
    ptx.cluster_arrive()  # neither CTA frees TMEM while the pair still uses it
    ptx.cluster_wait()
    if rank == 0 and tid == 0 and bug != 0:
        if bug == 2:
            ptx.tcgen05_commit_cg2_multicast(late, 2)
        ptx.mbarrier_wait(spare, 0)
        if bug == 2:
            ptx.mbarrier_wait_cluster(bye, 0)  # rank 1 arrives on it
    if rank == 1 and tid == 0 and bug == 2:
        ptx.mbarrier_wait_cluster(late, 0)
        ptx.mbarrier_arrive_cluster(ptx.mapa(bye, 0))
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish_cg2()
        ptx.tmem_dealloc_cg2(tmem, 256)


# ================================================================================================
# the sanitizer: bounds, barrier storage, initialisation, races, lifetimes
# ================================================================================================
def k_bounds(out, bug):
    """64 threads write one word each into 'data', then read a neighbour's after a barrier.
    bug 1: the index runs past the launch's dynamic shared memory (one word per thread from the end).
    bug 2: a negative index (numpy would wrap it around silently).
    bug 3: an ordinary store over the live mbarrier 'ready'.
    bug 4: an mbarrier arrive on an address in 'data', where no barrier lives.
    bug 5: a two-word store that runs from 'data' into 'A tile'.
    bug 6, 7: the global store to out runs past its end, or before its start (a negative index)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    if tid == 0:
        ptx.mbarrier_init(base + BAR(0), 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    i = DATA // 4 + tid
    if bug == 1:
        i = SHARED_BYTES // 4 + tid
    elif bug == 2:
        i = -1 - tid
    elif bug == 3 and tid == 0:
        i = BAR(0) // 4
    smem32[i] = tid
    if bug == 4 and tid == 0:
        ptx.mbarrier_arrive(base + DATA)
    if bug == 5 and tid == 0:
        smem32[(A_BUF - 4) // 4:(A_BUF + 4) // 4] = 7
    cuda.syncthreads()
    j = tid
    if bug == 6:
        j = tid + 64  # past the end of out (64 words)
    elif bug == 7:
        j = -1 - tid  # before its start
    out[j] = smem32[DATA // 4 + (tid + 1) % 64]


def k_init(out, bug):
    """64 threads. Warp 0 allocates 32 TMEM columns; everybody reads the TMEM address from the slot
    after the barrier; thread 0 writes 'data' word 0, everybody reads it after the barrier.
    bug 1: 'data' word 0 is read but nobody wrote it.
    bug 2: warp 1 reads the TMEM address slot before the barrier (before, or unordered with, the
    allocating warp's write)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp = tid // 32
    early = 0
    if bug == 2 and warp == 1:
        early = smem32[SLOT // 4]
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 32)
    if tid == 0 and bug != 1:
        smem32[DATA // 4] = 42
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    out[tid] = smem32[DATA // 4] + early
    if warp == 0:
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 32)


def k_race(out, bug):
    """Warp 0 writes 'data' word 0 (1, then 2); warp 1 reads it.
    bug 0: a barrier between the second write and the read.
    bug 1: no barrier: the second write and warp 1's read race (in either order).
    bug 2: warp 0 hands the value over through mbarrier 'ready' (arrive after the write), but warp 1
    reads without waiting on it.
    bug 3: warp 0 announces and issues a TMA load on 'ready' and only then writes the word; warp 1
    waits on 'ready' and reads it. The load's completion orders what warp 0 did before issuing it,
    not the write after it."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp = tid // 32
    ready = base + BAR(0)
    if tid == 0:
        smem32[DATA // 4] = 1
        ptx.mbarrier_init(ready, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        if bug == 3:
            ptx.mbarrier_arrive_expect_tx(ready, BOX_BYTES)
            ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 0, ready)
        smem32[DATA // 4] = 2
        if bug != 3:
            ptx.mbarrier_arrive(ready)
    if bug == 0:
        cuda.syncthreads()
    if warp == 1:
        if bug == 0 or bug == 3:
            ptx.mbarrier_wait(ready, 0)
        out[tid] = smem32[DATA // 4]
    if bug == 1 or bug == 2:
        cuda.syncthreads()  # (the end: every thread is done before warp 1 waits, so no deadlock)
        if warp == 1:
            ptx.mbarrier_wait(ready, 0)


def k_vector_race(out, bug):
    """Warp 1 stores 16 bytes of 'data' with one st.shared.v4; warp 0 stores the word in their middle
    (bytes 4-7). bug 0: a barrier orders the two stores. bug 1: nothing does: a race on the middle
    bytes only (the vector store's first and last bytes are nobody else's)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    if tid < 4:
        smem32[DATA // 4 + tid] = 0
    cuda.syncthreads()
    if tid == 0:
        smem32[DATA // 4 + 1] = 7
    if bug == 0:
        cuda.syncthreads()
    if tid == 32:
        ptx.st_shared_v4(base + DATA, 1, 2, 3, 4)
    cuda.syncthreads()
    if tid < 4:
        out[tid] = smem32[DATA // 4 + tid]


def k_peer(out, bug):
    """Two CTAs of a cluster (64 threads each). Thread 0 of CTA 0 stores a word into CTA 1's 'data'
    (DSMEM, st.shared::cluster) and arrives on CTA 1's 'mailbox'; CTA 1 waits on it and reads the
    word; a cluster barrier at the end keeps both alive until the peer is done.
    bug 1: CTA 1 neither waits on the mailbox nor meets CTA 0 at the end: it may exit before CTA 0's
    store and arrival land in it.
    bug 2: no cluster barrier after the barrier init: CTA 0 arrives on CTA 1's mailbox before its
    initialisation was published to CTA 0."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    rank = ptx.cluster_ctarank()
    mailbox = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(mailbox, 1)
        ptx.fence_mbarrier_init()
    if bug != 2:
        ptx.cluster_arrive()
        ptx.cluster_wait()
    if rank == 0 and tid == 0:
        ptx.st_shared_v4(ptx.mapa(base + DATA, 1), 5, 6, 7, 8)
        ptx.mbarrier_arrive_cluster(ptx.mapa(mailbox, 1))
    if rank == 1 and bug != 1:
        ptx.mbarrier_wait_cluster(mailbox, 0)
        out[tid] = smem32[DATA // 4 + 2]
    if bug == 0:
        ptx.cluster_arrive()
        ptx.cluster_wait()
    elif bug == 2 and rank == 1:  # (so that CTA 1 outlives the arrival)
        ptx.mbarrier_wait_cluster(mailbox, 0)
