"""An sm_90 producer/consumer micro-kernel for the runbook's instrumented builds (timeline, guard).

It has the shape of the chapter kernels' mainloop without tcgen05 (which Hopper lacks): warp 0 is a
TMA producer (one elected lane) that fills a ring of DEPTH stages with 128 x 64 fp16 boxes; warps
1-4 (128 threads) consume each stage (sum its elements) and release it. Barriers, as in step 7:
  full[s]   stage s is full:  the producer's arrive.expect_tx + the TMA's bytes  -> consumers wait
  empty[s]  stage s is free:  128 consumer arrivals                              -> producer waits

``extra_tx`` > 0 is the deliberate bug: the producer announces more bytes than the TMA delivers, so
full[0] never completes; the consumers wait on it forever, and the producer waits on empty[0] once
the ring wraps. Without the guard this hangs the GPU until the process is killed.

CTA c sums rows [128 (c K + kt), +128) of X for kt < K (its k_tiles); out[c, tid] is thread tid's
partial sum (consumers only), so sum(out[c]) == sum of its rows (checked in float64 with a tolerance).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, uint8
from numba.types import float16

from gemm_kernels import ptx
from gemm_kernels.smem_plan import SmemPlan
from gemm_kernels.trace import ROLE_TMA, ROLE_WRITEBACK

BOX_ROWS, BOX_COLS = 128, 64
BOX_BYTES = BOX_ROWS * BOX_COLS * 2
DEPTH = 2
THREADS = 160  # warp 0: producer; warps 1-4: consumers
CONSUMERS = 128
PER_THREAD = BOX_ROWS * BOX_COLS // CONSUMERS  # 64 fp16 per consumer thread per stage

plan = SmemPlan()
STAGE0 = plan.add("stage", BOX_BYTES, align=1024, count=DEPTH)
FULL0 = plan.add("full", 8, align=8, count=DEPTH)
EMPTY0 = plan.add("empty", 8, align=8, count=DEPTH)
plan.check("the micro-kernel")

SIGNATURE = "void(uint64, float32[:, ::1], int32, int32)"


@cuda.jit
def pipe_kernel(tmap, out, k_tiles, extra_tx):
    smem = cuda.shared.array(0, uint8, alignment=1024)
    smem16 = cuda.shared.array(0, float16, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    warp = tid // 32
    row0 = cuda.blockIdx.x * k_tiles * BOX_ROWS
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        for s in range(DEPTH):
            ptx.mbarrier_init(base + FULL0 + 8 * s, 1)
            ptx.mbarrier_init(base + EMPTY0 + 8 * s, CONSUMERS)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()

    if warp == 0:
        ptx.set_warp_role(ROLE_TMA)
        if ptx.elect_sync():
            stage = 0
            phase = 1  # a fresh ring is empty: the first pass does not wait
            for kt in range(k_tiles):
                ptx.mbarrier_wait(base + EMPTY0 + 8 * stage, phase)
                full = base + FULL0 + 8 * stage
                ptx.mbarrier_arrive_expect_tx(full, BOX_BYTES + extra_tx)
                ptx.tma_load_2d(base + STAGE0 + stage * BOX_BYTES, tmap, 0, row0 + kt * BOX_ROWS, full)
                stage += 1
                if stage == DEPTH:
                    stage = 0
                    phase ^= 1
    else:
        ptx.set_warp_role(ROLE_WRITEBACK)
        c = tid - 32
        acc = float32(0.0)
        stage = 0
        phase = 0
        for kt in range(k_tiles):
            ptx.mbarrier_wait(base + FULL0 + 8 * stage, phase)
            first = (STAGE0 + stage * BOX_BYTES) // 2 + c * PER_THREAD
            for i in range(PER_THREAD):
                acc += float32(smem16[first + i])
            ptx.fence_proxy_async()  # the stage's next write is a TMA load (async proxy): order these reads first
            ptx.mbarrier_arrive(base + EMPTY0 + 8 * stage)
            stage += 1
            if stage == DEPTH:
                stage = 0
                phase ^= 1
        out[cuda.blockIdx.x, c] = acc


def operands(ctas, k_tiles, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (ctas * k_tiles * BOX_ROWS, BOX_COLS)).astype(np.float16)
    return x, np.zeros((ctas, CONSUMERS), np.float32)


def expected(x, ctas, k_tiles):
    return x.astype(np.float64).reshape(ctas, k_tiles * BOX_ROWS * BOX_COLS).sum(axis=1)


def check(out, x, ctas, k_tiles):
    got = out.astype(np.float64).sum(axis=1)
    want = expected(x, ctas, k_tiles)
    return bool(np.allclose(got, want, rtol=0, atol=1e-3 * k_tiles * BOX_ROWS)), float(np.abs(got - want).max())


def run_emulator(ctas, k_tiles, *, extra_tx=0, trace=True, policy="lazy"):
    from gemm_kernels import emu

    x, out = operands(ctas, k_tiles)
    addr = 0x7F00_0000_0000
    models = {addr: emu.TensorMapModel(x, BOX_ROWS, BOX_COLS, "128B", name="X")}
    launch = emu.run(pipe_kernel, ctas, THREADS, (addr, out, k_tiles, extra_tx), shared_bytes=plan.size,
                     policy=policy, trace=trace, names=plan.regions, tensor_maps=models)
    return launch, x, out


def gpu_args(ctas, k_tiles, extra_tx=0):
    """Device inputs: (args tuple, keep-alive, x, out device array)."""
    from gemm_kernels.runtime.tensormap import TensorMap2D, encode_on_gpu

    x, out = operands(ctas, k_tiles)
    dx, dout = cuda.to_device(x), cuda.to_device(out)
    tm = encode_on_gpu(TensorMap2D.for_array(dx, (BOX_ROWS, BOX_COLS), swizzle="128B"), dx)
    return (np.uint64(tm.address), dout, np.int32(k_tiles), np.int32(extra_tx)), (dx, tm), x, dout
