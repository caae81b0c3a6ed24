"""Speed benchmark of the Blackwell emulator (a script, not a test).

(a) handoffs: a two-CTA cluster of 384 threads per CTA. CTA 0's producer thread (warp 0, lane 0)
    hands ROUNDS values through a ring of full/empty mbarriers to the 11 consumer warps of BOTH CTAs:
    it writes each value into its own and (through mapa, st.shared::cluster) the peer's shared memory
    and arrives on 'full' locally and remotely; all 352 consumer threads of each CTA wait on their
    CTA's 'full', check the value, meet at __syncwarp, and lane 0 of each consumer warp arrives on CTA
    0's 'empty' (remotely from CTA 1). 22 arrivals per 'empty' phase, 704 waits per round.
(b) gemm_v1: the chapter 1 kernel end to end on one CTA (128 x 128 x 64, tcgen05).

    taskset -c 0 python tools/bench_emulator.py [--rounds 1000] [--policy lazy] [--profile a|b]

Target: each under 5 s on one core.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np
from numba import cuda, uint32

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gemm_kernels import emu, ptx  # noqa: E402

STAGES = 4
THREADS = 384
CONSUMER_WARPS = THREADS // 32 - 1
FULL, EMPTY, SLOTS = 0, 64, 128  # offsets from the dynamic shared-memory base


def k_handoffs(out, rounds):
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    rank = ptx.cluster_ctarank()
    if tid == 0:
        for s in range(STAGES):
            ptx.mbarrier_init(base + FULL + 8 * s, 1)
            ptx.mbarrier_init(base + EMPTY + 8 * s, 2 * CONSUMER_WARPS)
        ptx.fence_mbarrier_init()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    stage = 0
    phase = 0
    if warp == 0:
        if rank == 0 and lane == 0:
            for r in range(rounds):
                ptx.mbarrier_wait_cluster(base + EMPTY + 8 * stage, phase ^ 1)  # CTA 1 arrives on it too
                slot = base + SLOTS + 16 * stage
                smem32[(SLOTS + 16 * stage) // 4] = r
                ptx.st_shared_v4(ptx.mapa(slot, 1), r, 0, 0, 0)
                ptx.mbarrier_arrive(base + FULL + 8 * stage)
                ptx.mbarrier_arrive_cluster(ptx.mapa(base + FULL + 8 * stage, 1))
                stage += 1
                if stage == STAGES:
                    stage = 0
                    phase ^= 1
    else:
        bad = 0
        for r in range(rounds):
            ptx.mbarrier_wait_cluster(base + FULL + 8 * stage, phase)
            if smem32[(SLOTS + 16 * stage) // 4] != r:
                bad += 1
            cuda.syncwarp()  # the whole warp has read the slot before lane 0 hands it back
            if lane == 0:
                ptx.mbarrier_arrive_cluster(ptx.mapa(base + EMPTY + 8 * stage, 0))
            stage += 1
            if stage == STAGES:
                stage = 0
                phase ^= 1
        out[rank * THREADS + tid] = rounds - bad
    ptx.cluster_arrive()  # CTA 0 keeps its shared memory until CTA 1's last remote arrival
    ptx.cluster_wait()


def bench_handoffs(rounds, policy):
    out = np.zeros(2 * THREADS, dtype=np.uint32)
    t0 = time.perf_counter()
    emu.run(k_handoffs, (2, 1, 1), THREADS, (out, rounds), cluster=(2, 1, 1), shared_bytes=1024, policy=policy)
    dt = time.perf_counter() - t0
    consumers = np.concatenate([out[32:THREADS], out[THREADS + 32:]])
    assert (consumers == rounds).all(), "a consumer saw a wrong value"
    return dt


def bench_gemm_v1(policy):
    from gemm_kernels.kernels.v1_one_tile import gemm_v1

    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    t0 = time.perf_counter()
    d = gemm_v1(a, b, backend="emulator", policy=policy)
    dt = time.perf_counter() - t0
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    err = float(np.abs(d.astype(np.float32) - ref).max())
    assert err < 0.05, err
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--policy", default="lazy", choices=["eager", "lazy", "random"])
    ap.add_argument("--profile", choices=["a", "b"], help="cProfile one benchmark and print the top functions")
    args = ap.parse_args()
    bench_gemm_v1(args.policy)  # warm-up: imports, Numba typing of the layouts helpers
    if args.profile:
        fn = (lambda: bench_handoffs(args.rounds, args.policy)) if args.profile == "a" else (
            lambda: bench_gemm_v1(args.policy))
        prof = cProfile.Profile()
        prof.runcall(fn)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    ta = bench_handoffs(args.rounds, args.policy)
    print(f"(a) 2-CTA cluster, {THREADS} threads/CTA, {args.rounds} producer/consumer handoffs "
          f"({args.policy}): {ta:.2f} s")
    tb = bench_gemm_v1(args.policy)
    print(f"(b) gemm_v1 128x128x64 on one CTA ({args.policy}): {tb:.2f} s")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print(f"    (on {cpus} CPU(s); target: each under 5 s on one core)")


if __name__ == "__main__":
    main()
