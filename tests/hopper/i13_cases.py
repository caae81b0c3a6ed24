"""H200 ground truth for the PTX forms issue 13 brought into the chapters that Hopper shares:

* ``mbarrier.arrive.relaxed.cluster`` from one elected lane per warp, remote through ``mapa``
  (chapters 8-9 hand TMEM back to the leader CTA this way);
* ``mbarrier.try_wait.parity`` with a suspend-time hint (``mbarrier_wait_sleep``, the writeback's
  wait for a tile);
* ``prefetch.tensormap`` before a TMA load (the producer warps of chapters 7-9).

Same scheme as micro_kernels.py (whose launcher and helpers this reuses): each kernel writes what
it observes; ``python tests/hopper/i13_cases.py --out tests/data/h200_ground_truth_i13.json`` records
the GPU's outputs, tests/test_ground_truth_i13.py replays the emulator against them byte for byte.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback

import numpy as np
from numba import cuda, uint8, uint32

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gemm_kernels import ptx  # noqa: E402
from tests.hopper.micro_kernels import (Case, _launch, bounded_wait, bounded_wait_cluster,  # noqa: E402
                                        encode_outputs, mbarrier_test_wait, spin_ns, tma_matrix)

# -- 1. relaxed cluster arrivals, one lane per warp -----------------------------------------------
RA_THREADS = 128  # 4 warps per CTA, 2 CTAs per cluster: 8 elected arrivals complete rank 0's phase
RA_ROUNDS = 3


@cuda.jit
def k_relaxed_arrive(out):
    """Rank 0 inits a barrier for 8 arrivals; in each of 3 rounds every warp of both CTAs elects one
    lane, which arrives (relaxed, cluster scope) on rank 0's barrier through mapa. out[b, 0..31]:
    elect.sync per lane of warp 0; out[b, 32 + r]: rank 0's bounded wait for round r; out[b, 40 + r]:
    test_wait of the NEXT phase right after round r completed (must be 0: exactly 8 arrivals count)."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ptx.cluster_ctarank()
    bar = base + uint32(0)
    if tid == 0:
        ptx.mbarrier_init(bar, 8)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    leader_bar = ptx.mapa(bar, 0)
    for r in range(RA_ROUNDS):
        e = ptx.elect_sync()
        if r == 0 and tid < 32:
            out[b, tid] = e
        if e:
            ptx.mbarrier_arrive_relaxed_cluster(leader_bar)
        if rank == 0 and tid == 0:
            out[b, 32 + r] = bounded_wait_cluster(bar, r & 1)
            out[b, 40 + r] = mbarrier_test_wait(bar, (r + 1) & 1)
        ptx.cluster_arrive()  # the next round starts once rank 0 has looked
        ptx.cluster_wait()


def _case_relaxed_arrive(backend, policy, seed):
    out = np.zeros((4, 48), np.uint32)
    _launch(backend, k_relaxed_arrive, 4, RA_THREADS, (out,), cluster=(2, 1, 1), smem=1024, policy=policy,
            seed=seed)
    return {"obs": out}


# -- 2. try_wait with a suspend-time hint ---------------------------------------------------------
@cuda.jit
def k_wait_sleep(out):
    """Warp 1 spins ~50 us, writes a word to shared memory and arrives (release) on a barrier for 1
    arrival; warp 0 waits on it with mbarrier_wait_sleep (try_wait.parity + hint) and reads the word.
    out[0..31]: the word each lane of warp 0 read after the wait; out[32]: a second wait on the
    completed phase returned; out[33]: test_wait of the phase it waited for (1)."""
    words = cuda.shared.array(0, uint32, alignment=1024)
    base = ptx.shared_addr(words)
    tid = cuda.threadIdx.x
    bar = base + uint32(0)
    if tid == 0:
        words[4] = 0
        ptx.mbarrier_init(bar, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid >= 32:
        if tid == 32:
            spin_ns(50_000)
            words[4] = 0xC0FFEE
            ptx.mbarrier_arrive(bar)
    else:
        ptx.mbarrier_wait_sleep(bar, 0)
        out[tid] = words[4]
        ptx.mbarrier_wait_sleep(bar, 0)  # a completed phase: returns at once
        if tid == 0:
            out[32] = 1
            out[33] = mbarrier_test_wait(bar, 0)


def _case_wait_sleep(backend, policy, seed):
    out = np.zeros(40, np.uint32)
    _launch(backend, k_wait_sleep, 1, 64, (out,), smem=1024, policy=policy, seed=seed)
    return {"obs": out}


# -- 3. prefetch.tensormap, then a TMA load -------------------------------------------------------
PF_BOX = (16, 64)  # rows, cols (uint16, 128-byte rows)
PF_BYTES = PF_BOX[0] * PF_BOX[1] * 2


@cuda.jit
def k_prefetch_then_load(tmap, out, status):
    """Thread 0 acquires and prefetches the tensor map, then TMA-loads the box at (64, 16) (128B
    swizzle); out: every byte of the destination; status[0]: the load's barrier completed."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    bar = base + uint32(PF_BYTES)
    for i in range(tid, PF_BYTES, 128):
        smem[i] = 0xA5
    ptx.fence_proxy_async()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        ptx.prefetch_tensormap(tmap)
        ptx.mbarrier_init(bar, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(bar, PF_BYTES)
        ptx.tma_load_2d(base, tmap, uint32(64), uint32(16), bar)
        status[0] = bounded_wait(bar, 0)
    cuda.syncthreads()
    for i in range(tid, PF_BYTES, 128):
        out[i] = smem[i]


def _case_prefetch(backend, policy, seed):
    mat = tma_matrix(np.uint16, 64, 256)
    out = np.zeros(PF_BYTES, np.uint8)
    status = np.zeros(2, np.uint32)
    _launch(backend, k_prefetch_then_load, 1, 128, ("tmap0", out, status), smem=PF_BYTES + 64,
            maps=[(mat, PF_BOX, "128B")], policy=policy, seed=seed)
    return {"smem": out, "status": status}


# -- 4. shfl.sync.idx from lane 0 (warp_uniform) -------------------------------------------------
@cuda.jit
def k_warp_uniform(out):
    """out[t] = warp_uniform(t * 7 + 3) for 128 threads: every lane gets lane 0's value."""
    tid = cuda.threadIdx.x
    out[tid] = ptx.warp_uniform(uint32(tid * 7 + 3))


def _case_warp_uniform(backend, policy, seed):
    out = np.zeros(128, np.uint32)
    _launch(backend, k_warp_uniform, 1, 128, (out,), smem=1024, policy=policy, seed=seed)
    return {"obs": out}


CASES = [
    Case("relaxed_cluster_arrive", "cluster of 2 (grid 4): 3 rounds of mbarrier.arrive.relaxed.cluster from "
         "one elect.sync lane per warp of both CTAs on rank 0's barrier (init count 8), through mapa",
         _case_relaxed_arrive,
         notes="obs[b]: 0..31 elect.sync of warp 0's lanes; 32+r rank 0's bounded wait for round r; 40+r "
               "test_wait of the next phase right after round r (0: only the 8 elected arrivals counted)"),
    Case("wait_sleep", "mbarrier.try_wait.parity with a suspend-time hint (10 ms) in a loop, released by "
         "another warp's arrive after ~50 us", _case_wait_sleep, isolate=True,
         notes="obs[0..31] the word written before the arrive, read by each waiting lane; obs[32] the "
               "second wait on the completed phase returned; obs[33] test_wait of that phase"),
    Case("prefetch_tensormap_load", "prefetch.tensormap, then a TMA 2D load (uint16 64 x 256, box 16 x 64, "
         "128B swizzle) at (64, 16); every byte of the 0xA5-filled destination", _case_prefetch),
]
CASES.append(Case("warp_uniform", "shfl.sync.idx.b32 from lane 0 with a full mask (ptx.warp_uniform) in 4 warps",
                   _case_warp_uniform, notes="obs[t]: what thread t received (lane 0's t * 7 + 3)"))
CASE_BY_NAME = {c.name: c for c in CASES}
DATA = os.path.join(ROOT, "tests", "data", "h200_ground_truth_i13.json")


def main(argv=None):
    from tests.hopper.record import metadata

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DATA)
    args = ap.parse_args(argv)
    doc = {"about": __doc__.split("\n\n")[0], **metadata(), "cases": {}}
    for case in CASES:
        t0 = time.time()
        try:
            rec = {"outputs": encode_outputs(case.run("gpu")), "seconds": round(time.time() - t0, 2)}
        except Exception as e:  # noqa: BLE001
            rec = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
        doc["cases"][case.name] = {"what": case.what, "notes": case.notes, **rec}
        print(case.name, "ok" if "outputs" in rec else rec["error"], flush=True)
    doc["date_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
