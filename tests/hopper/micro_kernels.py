"""Micro-kernels that check the emulator's hardware model against a real Hopper GPU (sm_90a).

Each kernel is written with the same ``gemm_kernels.ptx`` operations as the chapter kernels, so it
compiles for sm_90a AND runs unchanged on the emulator; each writes what it observes into output
arrays. ``CASES`` lists them with their inputs; ``run_case(case, "gpu" | "emulator")`` runs one and
returns its outputs as numpy arrays. ``tests/hopper/record.py`` records the GPU's outputs in
``tests/data/h200_ground_truth.json``; ``tests/test_ground_truth.py`` replays the emulator against
them byte for byte.

Four operations the chapters do not need are declared here, not in ``gemm_kernels.ptx`` (kept out
of its REGISTRY): ``mbarrier.test_wait.parity`` (the non-blocking probe, which both machines can
answer for the current phase, unlike try_wait whose emulator twin blocks), ``try_wait.parity`` with
cluster-scope acquire, and ``ld/st.shared::cluster.u32`` (DSMEM through a ``mapa`` address).

What the emulator models differently, by design (so not compared): ``mbarrier.try_wait`` on a phase
that has not completed returns 0 on the GPU after a time limit; the emulator's twin blocks until it
would return 1 (a try_wait loop that never succeeds is reported as a deadlock). The GPU's value is
recorded by the ``gpu_only_try_wait`` case.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, uint8, uint32, uint64

from gemm_kernels import ptx
from gemm_kernels.emu.context import thread as _thread
from gemm_kernels.ptx._declare import REGISTRY, asm_op, u32

# -- four extra PTX operations (intrinsic + twin), private to these tests ---------------------------


def _private(op):
    for k in [k for k, v in REGISTRY.items() if v is op]:
        del REGISTRY[k]
    return op


mbarrier_test_wait = _private(asm_op(
    "mbarrier_test_wait",
    "{{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [{bar}], {parity};\n"
    " selp.u32 {ok}, 1, 0, p;\n}}",
    results=(("ok", u32),), operands=(("bar", u32), ("parity", u32)),
    doc="Non-blocking: 1 if the phase with parity ``parity`` has completed, else 0."))


def _test_wait_twin(bar, parity):
    t = _thread()
    b = t.cta.mbarrier(bar, "mbarrier.test_wait.parity")
    t.advance()
    return int(b.phase_done(int(parity) & 1))


mbarrier_test_wait.twin = _test_wait_twin

mbarrier_try_wait_cluster = _private(asm_op(
    "mbarrier_try_wait_cluster",
    "{{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [{bar}], {parity};\n"
    " selp.u32 {ok}, 1, 0, p;\n}}",
    results=(("ok", u32),), operands=(("bar", u32), ("parity", u32)),
    doc="One try_wait.parity with cluster-scope acquire (arrivals came from the peer CTA)."))


def _try_wait_cluster_twin(bar, parity):
    from gemm_kernels.ptx.mbarrier import _wait

    return _wait(bar, parity, ".acquire.cluster")


mbarrier_try_wait_cluster.twin = _try_wait_cluster_twin

st_cluster_u32 = _private(asm_op(
    "st_cluster_u32", "st.shared::cluster.u32 [{addr}], {val};",
    operands=(("addr", u32), ("val", u32)),
    doc="Store 32 bits at a .shared::cluster address (own or peer CTA, from mapa)."))


def _st_cluster_twin(addr, val):
    t = _thread()
    cta, off = t.cta.resolve(addr, 4, "st.shared::cluster")
    cta.smem.buffer[off:off + 4] = np.frombuffer(np.uint32(int(val) & 0xFFFFFFFF).tobytes(), np.uint8)
    cta.smem.generic_write(off, off + 4)
    t.advance()


st_cluster_u32.twin = _st_cluster_twin

ld_cluster_u32 = _private(asm_op(
    "ld_cluster_u32", "ld.shared::cluster.u32 {v}, [{addr}];",
    results=(("v", u32),), operands=(("addr", u32),),
    doc="Load 32 bits from a .shared::cluster address (own or peer CTA, from mapa)."))


def _ld_cluster_twin(addr):
    t = _thread()
    cta, off = t.cta.resolve(addr, 4, "ld.shared::cluster")
    t.advance()
    return int(cta.smem.buffer[off:off + 4].view(np.uint32)[0])


ld_cluster_u32.twin = _ld_cluster_twin

# -- device helpers ------------------------------------------------------------------------------

WAIT_LIMIT_NS = 200_000_000  # a bounded wait gives up after 0.2 s (GPU); the emulator never needs it


@cuda.jit(device=True, forceinline=True)
def bounded_wait(bar, parity):
    """1 once the phase with ``parity`` completed; 0 if it did not within WAIT_LIMIT_NS (GPU only:
    the emulator's try_wait blocks until it succeeds, or reports a deadlock)."""
    t0 = ptx.globaltimer()
    while True:
        if ptx.mbarrier_try_wait(bar, parity) != 0:
            return uint32(1)
        if ptx.globaltimer() - t0 > uint64(WAIT_LIMIT_NS):
            return uint32(0)


@cuda.jit(device=True, forceinline=True)
def bounded_wait_cluster(bar, parity):
    t0 = ptx.globaltimer()
    while True:
        if mbarrier_try_wait_cluster(bar, parity) != 0:
            return uint32(1)
        if ptx.globaltimer() - t0 > uint64(WAIT_LIMIT_NS):
            return uint32(0)


@cuda.jit(device=True, forceinline=True)
def spin_ns(ns):
    """Let about ``ns`` nanoseconds pass on the GPU (bounded loop: the emulator's clock does not move
    while it spins, so there it is just 20000 reads of the timer)."""
    t0 = ptx.globaltimer()
    for _ in range(20000):
        if ptx.globaltimer() - t0 > uint64(ns):
            return


# -- 1. mbarrier ---------------------------------------------------------------------------------

MB_BOX = (16, 32)  # rows, cols of the uint16 box used for expect_tx / complete_tx
MB_BOX_BYTES = MB_BOX[0] * MB_BOX[1] * 2
MB_REGION = 1024
MB_BARS = 4 * MB_REGION  # barriers A, B, D, E at +0, +8, +16, +24
MB_SMEM = MB_BARS + 64
MB_ROUNDS = 37
MB_THREADS = 64


@cuda.jit
def k_mbarrier(out, tmap, rounds):
    """out[0..19]: test_wait/try_wait observations (see OBS_MBARRIER)."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    bar_a = base + MB_BARS
    bar_b = base + MB_BARS + 8
    bar_d = base + MB_BARS + 16
    bar_e = base + MB_BARS + 24
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        ptx.mbarrier_init(bar_a, 3)
        ptx.mbarrier_init(bar_b, 1)
        ptx.mbarrier_init(bar_d, MB_THREADS)
        ptx.mbarrier_init(bar_e, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    # arrival counting: A expects 3 arrivals, from threads 0, 1, 2 in turn
    if tid == 0:
        out[0] = mbarrier_test_wait(bar_a, 0)    # fresh barrier, current phase 0: 0
        out[1] = mbarrier_test_wait(bar_a, 1)    # the phase "before" phase 0: 1
        out[2] = ptx.mbarrier_try_wait(bar_a, 1)  # try_wait on the previous phase: 1
        ptx.mbarrier_arrive(bar_a)
        out[3] = mbarrier_test_wait(bar_a, 0)    # 1 of 3 arrivals: 0
    cuda.syncthreads()
    if tid == 1:
        ptx.mbarrier_arrive(bar_a)
    cuda.syncthreads()
    if tid == 0:
        out[4] = mbarrier_test_wait(bar_a, 0)    # 2 of 3: 0
    cuda.syncthreads()
    if tid == 2:
        ptx.mbarrier_arrive(bar_a)
    cuda.syncthreads()
    if tid == 0:
        out[5] = mbarrier_test_wait(bar_a, 0)    # 3 of 3: phase 0 complete: 1
        out[6] = mbarrier_test_wait(bar_a, 1)    # phase 1 is current now: 0
        out[7] = ptx.mbarrier_try_wait(bar_a, 0)  # 1
    # transaction bytes: expect_tx(2 boxes) without arriving, arrive.expect_tx(1 box), 3 TMA loads
    if tid == 0:
        ptx.mbarrier_expect_tx(bar_b, 2 * MB_BOX_BYTES)
        ptx.mbarrier_arrive_expect_tx(bar_b, MB_BOX_BYTES)
        out[8] = mbarrier_test_wait(bar_b, 0)    # arrivals done, 3 boxes of tx pending: 0
        ptx.tma_load_2d(base, tmap, 0, 0, bar_b)
        ptx.tma_load_2d(base + MB_REGION, tmap, 32, 16, bar_b)
        spin_ns(50000)                           # both have landed on the GPU by now
        out[9] = mbarrier_test_wait(bar_b, 0)    # one box still expected: 0
        ptx.tma_load_2d(base + 2 * MB_REGION, tmap, 0, 48, bar_b)
        out[10] = bounded_wait(bar_b, 0)         # the third box completes the phase: 1
        out[11] = mbarrier_test_wait(bar_b, 0)   # 1
        out[12] = mbarrier_test_wait(bar_b, 1)   # 0
        # two completions: parity 0 names phase 2 (current) again, not phase 0
        ptx.mbarrier_arrive(bar_e)
        ptx.mbarrier_arrive(bar_e)
        out[16] = mbarrier_test_wait(bar_e, 0)   # 0
        out[17] = mbarrier_test_wait(bar_e, 1)   # 1 (phase 1 completed)
    cuda.syncthreads()
    # many rounds: every thread arrives, then waits for the phase, and flips its parity
    phase = 0
    for _ in range(rounds):
        ptx.mbarrier_arrive(bar_d)
        ptx.mbarrier_wait(bar_d, phase)
        phase ^= 1
    cuda.syncthreads()
    if tid == 0:
        out[13] = mbarrier_test_wait(bar_d, 0)   # after 37 completions phase 37 is current
        out[14] = mbarrier_test_wait(bar_d, 1)
        out[15] = phase
        out[18] = ptx.mbarrier_try_wait(bar_d, 0)  # the previous phase (36): 1
    # the loaded boxes, so the test also sees the data that completed the transactions
    cuda.syncthreads()
    for i in range(tid, 3 * MB_BOX_BYTES, MB_THREADS):
        r = i // MB_BOX_BYTES
        out[32 + i] = smem[r * MB_REGION + i % MB_BOX_BYTES]


OBS_MBARRIER = {
    0: "fresh barrier: test_wait(parity 0) [current phase]",
    1: "fresh barrier: test_wait(parity 1) [the phase before phase 0]",
    2: "fresh barrier: try_wait(parity 1)",
    3: "count 3, 1 arrival: test_wait(0)",
    4: "count 3, 2 arrivals: test_wait(0)",
    5: "count 3, 3 arrivals: test_wait(0)",
    6: "count 3, 3 arrivals: test_wait(1) [phase 1 is current]",
    7: "count 3, 3 arrivals: try_wait(0)",
    8: "expect_tx(2 boxes) + arrive.expect_tx(1 box), no data yet: test_wait(0)",
    9: "... 2 of 3 boxes landed (after a 50 us spin): test_wait(0)",
    10: "... 3rd box: bounded wait(0) succeeded",
    11: "... test_wait(0) after completion",
    12: "... test_wait(1) after completion",
    13: "64 arrivals x 37 rounds: test_wait(0)",
    14: "64 arrivals x 37 rounds: test_wait(1)",
    15: "the waiters' parity variable after 37 rounds",
    16: "count 1, 2 completions: test_wait(0) [parity 0 = phase 2, current]",
    17: "count 1, 2 completions: test_wait(1)",
    18: "after 37 rounds: try_wait(0) [previous phase]",
}


@cuda.jit
def k_gpu_only_try_wait(out):
    """What only the GPU can show: try_wait.parity on the CURRENT phase returns 0 (after a time
    limit). The emulator's twin blocks instead, so this case is recorded, never replayed."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    if cuda.threadIdx.x == 0:
        ptx.mbarrier_init(base, 1)
        ptx.fence_mbarrier_init()
        t0 = ptx.globaltimer()
        out[0] = ptx.mbarrier_try_wait(base, 0)   # current phase: 0
        t1 = ptx.globaltimer()
        out[1] = ptx.mbarrier_try_wait(base, 1)   # previous phase: 1
        out[2] = uint32(t1 - t0)                  # ns that the failing try_wait took
        ptx.mbarrier_arrive(base)
        out[3] = ptx.mbarrier_try_wait(base, 0)   # now complete: 1
        out[4] = ptx.mbarrier_try_wait(base, 1)   # parity 1 = phase 1, current: 0


# -- 2. TMA loads and stores ----------------------------------------------------------------------

TMA_THREADS = 128
SENTINEL = 0xA5


@cuda.jit
def k_tma_load(tmap, coords, region, box_bytes, out, status):
    """Fill the destination regions with 0xA5, TMA-load one box per coordinate pair into region j,
    then copy every byte of every region to ``out``; status[j] = 1 if load j completed."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    n = coords.shape[0]
    total = n * region
    bar = base + uint32(total)
    for i in range(tid, total, TMA_THREADS):
        smem[i] = SENTINEL
    ptx.fence_proxy_async()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        ptx.mbarrier_init(bar, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        for j in range(n):
            ptx.mbarrier_arrive_expect_tx(bar, box_bytes)
            ptx.tma_load_2d(base + uint32(j * region), tmap, coords[j, 0], coords[j, 1], bar)
            status[j] = bounded_wait(bar, j & 1)
    cuda.syncthreads()
    for i in range(tid, total, TMA_THREADS):
        out[i] = smem[i]


@cuda.jit
def k_tma_store(tmap, coords, region, again, again_c0, again_c1, status):
    """Fill region j with a byte pattern, TMA-store region j to coords[j], commit, wait_group.read;
    then (if ``again``) overwrite region 0 and store it to (again_c0, again_c1). The destination
    array (prefilled by the host) is the output."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    n = coords.shape[0]
    total = n * region
    for i in range(tid, total, TMA_THREADS):
        smem[i] = uint8((i * 7 + 3 + (i >> 8)) & 0xFF)
    ptx.fence_proxy_async()
    cuda.syncthreads()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        for j in range(n):
            ptx.tma_store_2d(tmap, coords[j, 0], coords[j, 1], base + uint32(j * region))
        ptx.bulk_commit_group()
        ptx.bulk_wait_group_read0()
        status[0] = 1
        if again != 0:
            for i in range(region):  # the source may be reused once wait_group.read returned
                smem[i] = uint8((i * 11 + 0x5C) & 0xFF)
            ptx.fence_proxy_async()
            ptx.tma_store_2d(tmap, again_c0, again_c1, base)
            ptx.bulk_commit_group()
            ptx.bulk_wait_group_read0()
            status[1] = 1


def tma_matrix(dtype, rows, cols):
    """Every element distinct and non-zero: (row + 1) in the high part, the column in the low."""
    r = np.arange(rows, dtype=np.uint64)[:, None]
    c = np.arange(cols, dtype=np.uint64)[None, :]
    if np.dtype(dtype).itemsize == 2:
        v = ((r + 1) << 8) | (c & 0xFF)
    else:
        v = ((r + 1) << 16) | c
    return v.astype(dtype)


# name: dtype, (rows, cols) of the matrix, stored cols (None: dense), box (rows, cols), swizzle,
#       load coordinates (col, row), store coordinates (disjoint boxes), second store of region 0.
# Every box starts at a column whose byte offset is a multiple of 16, and stores start at
# non-negative coordinates: the H200 faults otherwise (see TMA_PROBES).
TMA_CONFIGS = {
    "none_24": (np.uint16, (80, 200), None, (10, 24), "none",
                [(0, 0), (40, 30), (192, 75), (-8, -3)], [(0, 0), (40, 30), (192, 75), (8, 50)], None),
    "none_64": (np.uint16, (80, 200), None, (16, 64), "none",
                [(64, 16), (160, 70)], [(64, 16), (160, 70)], None),
    "sw32": (np.uint16, (80, 200), None, (16, 16), "32B",
             [(0, 0), (16, 8), (192, 72), (-8, -2)], [(0, 0), (16, 20), (192, 72), (48, 40)], None),
    "sw64": (np.uint16, (80, 200), None, (12, 32), "64B",
             [(32, 8), (184, 70), (-16, 5)], [(32, 8), (184, 70), (96, 30)], None),
    "sw128": (np.uint16, (80, 200), None, (16, 64), "128B",
              [(0, 0), (64, 24), (160, 72), (-32, -8)], [(0, 0), (64, 24), (160, 72), (8, 50)], (128, 40)),
    "sw128_rows12": (np.uint16, (80, 200), None, (12, 64), "128B",
                     [(64, 5), (152, 74)], [(64, 5), (152, 74)], None),
    "sw128_u32": (np.uint32, (40, 100), None, (8, 32), "128B",
                  [(32, 8), (80, 36)], [(0, 0), (80, 36)], None),
    "sw64_u32": (np.uint32, (40, 100), None, (8, 16), "64B",
                 [(16, 3), (92, 35)], [(16, 3), (92, 35)], None),
    # a 136-column view of a 256-column matrix: row stride 512 B, the box crosses column 136
    "sw128_padded": (np.uint16, (80, 136), 256, (8, 64), "128B",
                     [(96, 4), (0, 76)], [(96, 4), (0, 76)], None),
}
# Single-box launches at coordinates the first H200 run faulted on (CUDA_ERROR_ILLEGAL_INSTRUCTION)
# or that border on them; each runs in its own process when recorded. name: (config, load or store,
# (col, row)). The recording says whether the GPU faulted; the emulator must refuse exactly those.
TMA_PROBES = {
    "load_col_unaligned_interior": ("none_24", "load", (42, 30)),    # column offset 84 B
    "load_col_unaligned_8B": ("none_24", "load", (4, 0)),            # 8 B
    "load_col_unaligned_edge": ("none_24", "load", (190, 75)),       # 380 B, partly out of bounds
    "load_col_unaligned_negative": ("sw32", "load", (-4, -2)),       # -8 B
    "load_col_negative_aligned": ("sw32", "load", (-8, -2)),         # -16 B
    "load_u32_col_unaligned": ("sw64_u32", "load", (90, 35)),        # 360 B
    "store_col_negative": ("sw128", "store", (-32, 50)),
    "store_row_negative": ("sw128", "store", (0, -8)),
    "store_col_unaligned": ("none_24", "store", (42, 30)),
    "store_edge": ("sw128", "store", (160, 72)),                     # partly out of bounds (right, bottom)
    "store_fully_oob": ("sw128", "store", (208, 0)),
}
TMA_OOB = (np.uint16, (80, 200), None, (16, 64), "128B", [(208, 0), (0, 80), (-64, -16)], [], None)


def _round_up(x, m):
    return -(-x // m) * m


def tma_layout(cfg):
    dtype, shape, stored, box, swz, loads, stores, again = cfg
    box_bytes = box[0] * box[1] * np.dtype(dtype).itemsize
    region = _round_up(box_bytes, 1024) + 1024  # 1 KiB past every box shows stray writes
    return box_bytes, region


def tma_global(cfg, *, fill=None):
    """(backing array, the matrix view the tensor map describes)."""
    dtype, (rows, cols), stored, *_ = cfg
    full = tma_matrix(dtype, rows, stored or cols) if fill is None else \
        np.full((rows, stored or cols), fill, dtype=dtype)
    return full, full[:, :cols]


# -- 3. clusters of 2 ----------------------------------------------------------------------------

CL_THREADS = 64
CL_BLOCKS = 4
CL_BOX = (8, 64)
CL_BOX_BYTES = CL_BOX[0] * CL_BOX[1] * 2
CL_TMA_DST = 2048
CL_BAR_R = 4096       # remote-arrival barrier (32 arrivals from the peer's warp 0)
CL_BAR_T = 4104       # TMA barrier of rank 0, signalled by rank 1's TMA load
CL_SMEM = 8192
CL_OUT = 288
CL_TMA_COORD = (64, 10)


@cuda.jit
def k_cluster(out, dump, tmap):
    """Per CTA (row b of out): rank, nctarank, shared addresses and mapa results; DSMEM stores and
    loads through mapa; remote arrivals with a message; a TMA load issued by rank 1 into rank 0's
    shared memory that completes on rank 0's barrier (the non-cta_group form, allowed on sm_90)."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    words = cuda.shared.array(0, uint32, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ptx.cluster_ctarank()
    peer = rank ^ 1
    bar_r = base + CL_BAR_R
    bar_t = base + CL_BAR_T
    for i in range(tid, CL_BAR_R // 4, CL_THREADS):  # not the barriers: thread 0 initialises them
        words[i] = 0
    if tid == 0:
        out[b, 0] = rank
        out[b, 1] = ptx.cluster_nctarank()
        out[b, 2] = base
        out[b, 3] = ptx.mapa(base, 0)
        out[b, 4] = ptx.mapa(base, 1)
        out[b, 5] = ptx.mapa(base + 0x124, peer)
        out[b, 6] = ptx.mapa(bar_r, rank)
        ptx.fence_proxy_tensormap_acquire(tmap)
        ptx.mbarrier_init(bar_r, 32)
        ptx.mbarrier_init(bar_t, 1)
        ptx.fence_mbarrier_init()
    ptx.fence_proxy_async()
    cuda.syncthreads()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    # DSMEM: every thread writes one word into the PEER's words[16 + tid]
    st_cluster_u32(ptx.mapa(base + 64 + 4 * tid, peer), 0xC0DE0000 | (b << 8) | tid)
    ptx.cluster_arrive()
    ptx.cluster_wait()
    out[b, 16 + tid] = words[16 + tid]                                   # what the peer wrote here
    out[b, 80 + tid] = ld_cluster_u32(ptx.mapa(base + 64 + 4 * tid, peer))  # what I wrote there
    out[b, 144 + tid] = ld_cluster_u32(ptx.mapa(base + 64 + 4 * tid, rank))  # own, via mapa
    # remote arrivals: warp 0 writes a word into the peer, then arrives (release.cluster) on the
    # peer's barrier; every thread waits on its own barrier (acquire.cluster) and reads the words
    if tid < 32:
        st_cluster_u32(ptx.mapa(base + 512 + 4 * tid, peer), 0xBEEF0000 | (b << 8) | tid)
        ptx.mbarrier_arrive_cluster(ptx.mapa(bar_r, peer))
    ok = bounded_wait_cluster(bar_r, 0)
    if tid == 0:
        out[b, 7] = ok
    if tid < 32:
        out[b, 208 + tid] = words[128 + tid]
    # TMA: rank 1 loads a box into rank 0's buffer, signalling rank 0's barrier
    if tid == 0 and rank == 0:
        ptx.mbarrier_arrive_expect_tx(bar_t, CL_BOX_BYTES)
    if tid == 0 and rank == 1:
        ptx.tma_load_2d(ptx.mapa(base + CL_TMA_DST, 0), tmap, CL_TMA_COORD[0], CL_TMA_COORD[1],
                        ptx.mapa(bar_t, 0))
    if tid == 0 and rank == 0:
        out[b, 8] = bounded_wait_cluster(bar_t, 0)
    cuda.syncthreads()
    for i in range(tid, CL_BOX_BYTES + 256, CL_THREADS):
        dump[b, i] = smem[CL_TMA_DST + i]
    ptx.cluster_arrive()  # no CTA leaves while its peer may still touch its shared memory
    ptx.cluster_wait()


@cuda.jit
def k_cluster_tma_peer_barrier(out, dump, tmap):
    """The questionable form: rank 1 loads into ITS OWN shared memory but signals rank 0's barrier
    (what .cta_group::2 allows on sm_100a). out[b, 0]: rank 0's bounded wait succeeded; out[b, 1]
    (rank 1): its own barrier at that offset completed once it announced one box and arrived, i.e.
    the bytes were counted there; out[b, 2] (rank 1): test_wait before that arrival."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ptx.cluster_ctarank()
    bar_t = base + CL_BAR_T
    for i in range(tid, CL_BAR_R, CL_THREADS):
        smem[i] = 0
    ptx.fence_proxy_async()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        ptx.mbarrier_init(bar_t, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if tid == 0 and rank == 0:
        ptx.mbarrier_arrive_expect_tx(bar_t, CL_BOX_BYTES)
    if tid == 0 and rank == 1:
        ptx.tma_load_2d(base + CL_TMA_DST, tmap, CL_TMA_COORD[0], CL_TMA_COORD[1], ptx.mapa(bar_t, 0))
    if tid == 0 and rank == 0:
        out[b, 0] = bounded_wait_cluster(bar_t, 0)
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if tid == 0 and rank == 1:
        # did the load complete its bytes on the barrier at that offset in the DESTINATION CTA?
        # arrive with one box announced: the phase completes at once iff those bytes were counted
        out[b, 2] = mbarrier_test_wait(bar_t, 0)
        ptx.mbarrier_arrive_expect_tx(bar_t, CL_BOX_BYTES)
        spin_ns(20000)
        out[b, 1] = mbarrier_test_wait(bar_t, 0)
    for i in range(tid, CL_BOX_BYTES, CL_THREADS):
        dump[b, i] = smem[CL_TMA_DST + i]
    ptx.cluster_arrive()
    ptx.cluster_wait()


# -- 4. warps: elect.sync and named barriers -------------------------------------------------------

WP_THREADS = 128
WP_ROUNDS = 5


@cuda.jit
def k_warp(out):
    """out[0:128]: elect.sync per thread (full mask). Named barriers 1 (warps 0-1, 64 threads) and
    2 (warps 2-3, 64 threads) carry values between the warps of each group; barrier 3 is a
    bar.arrive (warp 2) / bar.sync (warp 3) producer-consumer pair; barrier 4 runs 5 generations."""
    words = cuda.shared.array(0, uint32, alignment=1024)
    tid = cuda.threadIdx.x
    warp = tid // 32
    lane = tid % 32
    out[tid] = ptx.elect_sync()
    if warp == 0:
        words[lane] = 0x1000 + lane
    if warp == 2:
        words[64 + lane] = 0x2000 + lane
    if warp < 2:
        ptx.named_barrier_sync(1, 64)
    else:
        ptx.named_barrier_sync(2, 64)
    if warp == 1:
        out[128 + lane] = words[lane]
    if warp == 3:
        out[160 + lane] = words[64 + lane]
    # producer / consumer on barrier 3: warp 2 writes then arrives; warp 3 syncs then reads
    if warp == 2:
        words[128 + lane] = 0x3000 + lane
        ptx.named_barrier_arrive(3, 64)
    if warp == 3:
        ptx.named_barrier_sync(3, 64)
        out[192 + lane] = words[128 + lane]
    # five generations of barrier 4 between warps 0 and 1
    if warp < 2:
        for r in range(WP_ROUNDS):
            if warp == 0:
                words[256 + lane] = 0x4000 + 0x100 * r + lane
            ptx.named_barrier_sync(4, 64)
            if warp == 1:
                out[224 + 32 * r + lane] = words[256 + lane]
            ptx.named_barrier_sync(4, 64)
    cuda.syncthreads()
    if tid == 0:
        out[384] = 1


# -- the cases ------------------------------------------------------------------------------------

class Case:
    """One micro-kernel launch: ``run(backend)`` -> {output name: numpy array}."""

    def __init__(self, name, what, fn, *, gpu_only=(), notes="", policies=("lazy", "eager"), isolate=False,
                 emulator_refuses=None):
        self.name = name
        self.what = what
        self.fn = fn
        self.gpu_only = tuple(gpu_only)  # outputs recorded but not compared (the emulator cannot observe them)
        self.notes = notes
        self.policies = policies
        # run in a process of its own on the GPU: it may fault (the fault is then the recorded result,
        # and the emulator must raise an EmulatorError for it)
        self.isolate = isolate
        # a regex the emulator's error must match: the GPU runs this launch but misbehaves silently
        # (e.g. a barrier that is never signalled), so the emulator refuses it with a diagnostic
        self.emulator_refuses = emulator_refuses

    def run(self, backend, policy="lazy", seed=0):
        return self.fn(backend, policy, seed)


_EMU_TMAP = 0x7F00_0000_0000


def _launch(backend, kernel, grid, block, args, *, cluster=(1, 1, 1), smem, maps=(), policy="lazy", seed=0):
    """maps: [(host matrix view, box, swizzle)]: each becomes a tensor map; its address replaces the
    placeholder string "tmapI" in args. Host numpy arrays in args are copied in and back (GPU)."""
    if backend == "emulator":
        from gemm_kernels import emu

        models, addrs = {}, []
        for i, (view, box, swz) in enumerate(maps):
            addr = _EMU_TMAP + 128 * i
            models[addr] = emu.TensorMapModel(view, box[0], box[1], swz, name=f"tmap{i}")
            addrs.append(addr)
        real = [addrs[int(a[4:])] if isinstance(a, str) else a for a in args]
        emu.run(kernel, grid, block, real, cluster=cluster, shared_bytes=smem, policy=policy, seed=seed,
                tensor_maps=models)
        return
    if backend != "gpu":
        raise ValueError(backend)
    from gemm_kernels.runtime.launch import launch
    from gemm_kernels.runtime.tensormap import TensorMap2D, encode_on_gpu

    keep, dev, addrs, backs = [], [], [], []
    for view, box, swz in maps:
        d_full = cuda.to_device(view.base if view.base is not None else view)
        d_view = d_full[:, :view.shape[1]]
        tm = encode_on_gpu(TensorMap2D.for_array(d_view, box, swizzle=swz), d_view)
        keep.append((d_full, tm))
        backs.append((view, d_full))
        addrs.append(np.uint64(tm.address))
    real = []
    for a in args:
        if isinstance(a, str):
            real.append(addrs[int(a[4:])])
        elif isinstance(a, np.ndarray):
            d = cuda.to_device(a)
            dev.append((a, d))
            real.append(d)
        else:
            real.append(a)
    launch(kernel, grid, block, tuple(real), cluster=cluster, shared_bytes=smem, sync=True)
    cuda.synchronize()
    for host, d in dev:
        host[...] = d.copy_to_host()
    for view, d_full in backs:  # tensor-map targets (TMA stores write them)
        full = view.base if view.base is not None else view
        full[...] = d_full.copy_to_host()
    del keep


def _case_mbarrier(backend, policy, seed):
    out = np.zeros(32 + 3 * MB_BOX_BYTES, np.uint32)
    mat = tma_matrix(np.uint16, 64, 64)
    _launch(backend, k_mbarrier, 1, MB_THREADS, (out, "tmap0", np.int32(MB_ROUNDS)), smem=MB_SMEM,
            maps=[(mat, MB_BOX, "none")], policy=policy, seed=seed)
    return {"obs": out[:32].copy(), "boxes": out[32:].astype(np.uint8)}


def _case_gpu_only(backend, policy, seed):
    out = np.zeros(8, np.uint32)
    _launch(backend, k_gpu_only_try_wait, 1, 32, (out,), smem=1024, policy=policy, seed=seed)
    return {"obs": out}


def _tma_load_case(cfg, loads=None):
    def fn(backend, policy, seed):
        dtype, shape, stored, box, swz, cfg_loads, stores, again = cfg
        nonlocal loads
        loads = cfg_loads if loads is None else loads
        box_bytes, region = tma_layout(cfg)
        full, view = tma_global(cfg)
        coords = np.array(loads, dtype=np.int32).reshape(-1, 2)
        out = np.zeros(len(loads) * region, np.uint8)
        status = np.zeros(len(loads), np.uint32)
        _launch(backend, k_tma_load, 1, TMA_THREADS,
                ("tmap0", coords, np.int32(region), np.int32(box_bytes), out, status),
                smem=len(loads) * region + 64, maps=[(view, box, swz)], policy=policy, seed=seed)
        return {"smem": out, "status": status}
    return fn


def _tma_store_case(cfg, stores=None, again=None):
    def fn(backend, policy, seed):
        dtype, shape, stored, box, swz, loads, cfg_stores, cfg_again = cfg
        nonlocal stores, again
        if stores is None:
            stores, again = cfg_stores, cfg_again
        box_bytes, region = tma_layout(cfg)
        full, view = tma_global(cfg, fill=np.array(0xEEEEEEEE, np.uint64).astype(dtype))
        coords = np.array(stores, dtype=np.int32).reshape(-1, 2)
        status = np.zeros(2, np.uint32)
        ag = again or (0, 0)
        _launch(backend, k_tma_store, 1, TMA_THREADS,
                ("tmap0", coords, np.int32(region), np.int32(again is not None), np.int32(ag[0]),
                 np.int32(ag[1]), status),
                smem=len(stores) * region, maps=[(view, box, swz)], policy=policy, seed=seed)
        return {"global": full.view(np.uint8).ravel().copy(), "status": status}
    return fn


def _cluster_inputs():
    mat = tma_matrix(np.uint16, 80, 200)
    return mat, [(mat, CL_BOX, "128B")]


def _case_cluster(backend, policy, seed):
    mat, maps = _cluster_inputs()
    out = np.zeros((CL_BLOCKS, CL_OUT), np.uint32)
    dump = np.zeros((CL_BLOCKS, CL_BOX_BYTES + 256), np.uint8)
    _launch(backend, k_cluster, CL_BLOCKS, CL_THREADS, (out, dump, "tmap0"), cluster=(2, 1, 1),
            smem=CL_SMEM, maps=maps, policy=policy, seed=seed)
    return {"obs": out, "tma_dump": dump}


def _case_cluster_peer_barrier(backend, policy, seed):
    mat, maps = _cluster_inputs()
    out = np.zeros((CL_BLOCKS, 4), np.uint32)
    dump = np.zeros((CL_BLOCKS, CL_BOX_BYTES), np.uint8)
    _launch(backend, k_cluster_tma_peer_barrier, CL_BLOCKS, CL_THREADS, (out, dump, "tmap0"),
            cluster=(2, 1, 1), smem=CL_SMEM, maps=maps, policy=policy, seed=seed)
    return {"obs": out, "tma_dump": dump}


def _case_warp(backend, policy, seed):
    out = np.zeros(400, np.uint32)
    _launch(backend, k_warp, 1, WP_THREADS, (out,), smem=2048, policy=policy, seed=seed)
    return {"obs": out}


CASES = [
    Case("mbarrier", "arrival counts, expect_tx/complete_tx with 3 TMA boxes, parities of the current "
         "and previous phase (test_wait, try_wait on completed phases), 37 rounds of 64 arrivals",
         _case_mbarrier, notes="obs indices: " + "; ".join(f"{k}: {v}" for k, v in OBS_MBARRIER.items())),
    Case("gpu_only_try_wait", "try_wait.parity on the current phase of a fresh barrier (GPU only)",
         _case_gpu_only, gpu_only=("obs",),
         notes="obs[0] try_wait(current phase) -> 0 after a time limit; obs[1] try_wait(previous) -> 1; "
               "obs[2] ns the failing try_wait took; obs[3] try_wait(0) after the completing arrive -> 1; "
               "obs[4] try_wait(1) then (current phase 1) -> 0. The emulator's try_wait twin blocks until "
               "the phase completes (a try_wait loop that never succeeds is its deadlock report), so it "
               "cannot observe the 0s: not replayed."),
]
for _name, _cfg in TMA_CONFIGS.items():
    _dt, _shape, _stored, _box, _swz, _loads, _stores, _again = _cfg
    CASES.append(Case(f"tma_load_{_name}",
                      f"TMA 2D load, {np.dtype(_dt).name} matrix {_shape}"
                      f"{f' (row stride {_stored * np.dtype(_dt).itemsize} B)' if _stored else ''}, box {_box}, "
                      f"swizzle {_swz}, at (col, row) {_loads}; every byte of the 0xA5-filled destination",
                      _tma_load_case(_cfg)))
    if _stores:
        CASES.append(Case(f"tma_store_{_name}",
                          f"TMA 2D store + commit + wait_group.read, box {_box}, swizzle {_swz}, at {_stores}"
                          f"{f'; region 0 rewritten after wait_group.read and stored again at {_again}' if _again else ''}"
                          f"; the whole destination matrix (prefilled 0xEE)", _tma_store_case(_cfg)))
CASES.append(Case("tma_load_fully_oob", "TMA 2D loads of boxes wholly outside the matrix (right, below, "
                  "above-left): zero fill, full box bytes complete the barrier", _tma_load_case(TMA_OOB)))
for _name, (_cfgname, _kind, _xy) in TMA_PROBES.items():
    _cfg = TMA_CONFIGS[_cfgname]
    _elem = np.dtype(_cfg[0]).itemsize
    CASES.append(Case(f"tma_probe_{_name}",
                      f"one TMA {_kind} with tensor map {_cfgname} (box {_cfg[3]}, swizzle {_cfg[4]}) at (col, row) "
                      f"{_xy}: column byte offset {_xy[0] * _elem}",
                      _tma_load_case(_cfg, [_xy]) if _kind == "load" else _tma_store_case(_cfg, [_xy]),
                      isolate=True, policies=("lazy",)))
CASES += [
    Case("cluster", "cluster of 2 (grid 4): %cluster_ctarank, %cluster_nctarank, shared address of the "
         "dynamic array, mapa results, DSMEM st/ld.shared::cluster, remote mbarrier arrivals carrying "
         "DSMEM data, cluster barrier, a TMA load by rank 1 into rank 0's memory on rank 0's barrier",
         _case_cluster,
         notes="obs[b]: 0 rank, 1 nctarank, 2 shared_addr(dyn), 3 mapa(base,0), 4 mapa(base,1), "
               "5 mapa(base+0x124, peer), 6 mapa(bar, own rank), 7 remote-arrival wait ok, 8 TMA wait ok "
               "(rank 0), 16+t words the peer stored here, 80+t ld.shared::cluster of the peer, 144+t "
               "ld.shared::cluster of own via mapa, 208+t words written by the peer before its remote "
               "arrive"),
    Case("cluster_tma_peer_barrier", "cluster of 2: rank 1 TMA-loads into its OWN shared memory but "
         "signals rank 0's barrier with the plain (non-.cta_group) form", _case_cluster_peer_barrier,
         notes="On sm_100a .cta_group::2 makes this legal; on sm_90a PTX has only the plain form. "
               "obs[b,0] (rank 0): its bounded wait (0.2 s) succeeded; obs[b,1] (rank 1): its own barrier at "
               "the same offset completed after it announced one box and arrived (the bytes were counted "
               "there); obs[b,2] (rank 1): test_wait before that arrival. H200: rank 0's barrier never completed, "
               "the bytes landed in rank 1 and were counted on rank 1's barrier. The emulator refuses the launch.",
         isolate=True, emulator_refuses=r"barrier.*destination|destination.*barrier"),
    Case("warp", "elect.sync with a full mask; named barriers with 64-thread counts on IDs 1 and 2, "
         "bar.arrive/bar.sync producer-consumer on ID 3, 5 generations on ID 4", _case_warp,
         notes="obs[0:128] elect.sync per thread; 128+l warp 1 read of warp 0's words (bar 1); 160+l "
               "warp 3 read of warp 2's (bar 2); 192+l bar.arrive/bar.sync 3; 224+32r+l round r of bar 4"),
]
CASE_BY_NAME = {c.name: c for c in CASES}


def encode_outputs(outputs):
    """{name: array} -> JSON-able {name: {dtype, shape, hex}} (and values for short arrays)."""
    enc = {}
    for name, arr in outputs.items():
        arr = np.ascontiguousarray(arr)
        e = {"dtype": arr.dtype.name, "shape": list(arr.shape), "hex": arr.tobytes().hex()}
        if arr.size <= 64 and arr.dtype.kind in "iu":
            e["values"] = [int(x) for x in arr.ravel()]
        enc[name] = e
    return enc


def decode_output(e):
    return np.frombuffer(bytes.fromhex(e["hex"]), dtype=np.dtype(e["dtype"])).reshape(e["shape"])


def diff_report(name, want, got, limit=8):
    """'' when equal byte for byte, else the first differing elements."""
    want = np.ascontiguousarray(want)
    got = np.ascontiguousarray(got)
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{name}: shape/dtype {got.shape} {got.dtype} differ from the recorded {want.shape} {want.dtype}"
    if want.tobytes() == got.tobytes():
        return ""
    idx = np.argwhere(want != got)
    lines = [f"{name}: {len(idx)} of {want.size} elements differ"]
    for i in idx[:limit]:
        i = tuple(int(x) for x in i)
        lines.append(f"  [{', '.join(map(str, i))}] GPU {int(want[i]):#x} emulator {int(got[i]):#x}")
    return "\n".join(lines)


def check_emulator(case, rec, policy="lazy", seed=0):
    """Replay ``case`` on the emulator against a GPU record ({"outputs": ...} or {"error": ...}).
    Returns '' when the emulator agrees: the same bytes; or an EmulatorError where the GPU faulted;
    or, for a case the emulator refuses by design, an EmulatorError matching ``emulator_refuses``."""
    import re

    from gemm_kernels.emu.errors import EmulatorError, MemoryFault

    if "error" in rec or case.emulator_refuses:
        try:
            case.run("emulator", policy=policy, seed=seed)
        except EmulatorError as e:
            if case.emulator_refuses and not re.search(case.emulator_refuses, str(e), re.S):
                return f"{case.name}: the emulator raised {type(e).__name__} but not the expected diagnostic: {e}"
            if "error" in rec and not isinstance(e, MemoryFault):
                # every fault the H200 showed was an illegal access (a TMA box start or store): the
                # emulator must say so, not fail in some other way
                return f"{case.name}: the GPU faulted ({rec['error']}) but the emulator raised {type(e).__name__}: {e}"
            return ""
        why = f"the GPU faulted ({rec['error']})" if "error" in rec else "it refuses this launch by design"
        return f"{case.name}: {why}, but the emulator ran it without an error"
    got = case.run("emulator", policy=policy, seed=seed)
    problems = []
    for out, enc in rec["outputs"].items():
        if out in case.gpu_only:
            continue
        d = diff_report(f"{case.name}.{out}", decode_output(enc), got[out])
        if d:
            problems.append(d)
    return "\n".join(problems)
