"""The peer-running rule (emu.PeerNotRunning): an operation that touches a peer CTA's shared memory or
barriers before anything has shown the issuing thread that the peer runs is reported, naming the
operation, its kernel line and the peer's rank. Chapters 8 and 9 allocated their pair's TMEM
(tcgen05.alloc.cta_group::2, a store and an arrive into the peer) before their first cluster barrier
until issue 20; the variant below puts that order back."""
import inspect
import re

import numpy as np
import pytest
from numba import cuda, uint32

from gemm_kernels import book_helpers, ptx
from gemm_kernels.check import random_operands
from gemm_kernels.emu import PeerNotRunning
from gemm_kernels.kernels import v8_two_cta, v9_two_consumers

from tests.emu_kernels import BAR, DATA, run

POLICIES = ["lazy", "eager", "random"]

FIXED_SETUP = """        ptx.cluster_arrive()  # barriers initialised in both CTAs, and both CTAs are running
        ptx.cluster_wait()
        if warp == 0:  # the pair's allocation writes into the peer CTA: only now that it is known to run
            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)
"""
OLD_SETUP = """        if warp == 0:
            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)
        ptx.cluster_arrive()  # barriers initialised and TMEM allocated in both CTAs
        ptx.cluster_wait()
"""


def _old_alloc_line(module):
    """In the old order the alloc sits one line below where the set-up cluster barrier is now."""
    lines, first = inspect.getsourcelines(module.make_kernel)
    i = [i for i, line in enumerate(lines) if "ptx.cluster_arrive()" in line][0]
    return first + i + 1


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("ch, module, shape", [(8, v8_two_cta, (256, 256, 64)), (9, v9_two_consumers, (512, 256, 64))])
def test_old_set_up_is_reported(ch, module, shape, policy):
    old = book_helpers.variant(ch, {FIXED_SETUP: OLD_SETUP})
    with pytest.raises(PeerNotRunning) as err:
        old.entry(*random_operands(*shape), backend="emulator", policy=policy)
    msg = str(err.value)
    line = _old_alloc_line(module)
    assert msg.startswith("tcgen05.alloc.cta_group::2"), msg
    name = module.__name__.rsplit(".", 1)[1]
    assert re.search(rf"{name}\.py>?:{line} ", msg.split(" touches ")[0]), msg
    assert "of the peer CTA (1,0,0) [cluster 0 rank 1]" in msg or "of the peer CTA (0,0,0) [cluster 0 rank 0]" in msg
    assert "cluster_arrive" in msg


def k_dsmem(out, bug):
    """Rank 0 stores a word into rank 1's shared memory and arrives on rank 1's barrier; rank 1 waits
    and reads it. bug 1: the store comes before the set-up cluster barrier."""
    smem = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    rank = ptx.cluster_ctarank()
    tid = cuda.threadIdx.x
    if tid == 0:
        ptx.mbarrier_init(base + BAR(0), 1)
        ptx.fence_mbarrier_init()
    if bug == 1 and rank == 0 and tid == 0:
        ptx.st_shared_v4(ptx.mapa(base + DATA, 1), 7, 0, 0, 0)
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if rank == 0 and tid == 0:
        if bug == 0:
            ptx.st_shared_v4(ptx.mapa(base + DATA, 1), 7, 0, 0, 0)
        ptx.mbarrier_arrive_cluster(ptx.mapa(base + BAR(0), 1))
    if rank == 1 and tid == 0:
        ptx.mbarrier_wait_cluster(base + BAR(0), 0)
        out[0] = smem[DATA // 4]
    ptx.cluster_arrive()
    ptx.cluster_wait()


def test_dsmem_store_before_the_cluster_barrier():
    out = np.zeros(1, np.uint32)
    run(k_dsmem, (out, 0), block=32, grid=2, cluster=2)
    assert out[0] == 7
    with pytest.raises(PeerNotRunning, match=r"st\.shared\.v4 by thread 0 .* peer CTA \(1,0,0\) \[cluster 0 rank 1\]"):
        run(k_dsmem, (np.zeros(1, np.uint32), 1), block=32, grid=2, cluster=2)


def k_remote_arrive_after_wait(out, bug):
    """Rank 1 learns that rank 0 runs from a wait on its own barrier, on which rank 0 arrived (after the
    set-up cluster barrier); then it arrives back remotely: shown running, so not reported. bug 1: rank 0
    arrives on rank 1's barrier before any cluster barrier."""
    smem = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    rank = ptx.cluster_ctarank()
    tid = cuda.threadIdx.x
    if tid == 0:
        ptx.mbarrier_init(base + BAR(0), 1)
        ptx.fence_mbarrier_init()
    if bug == 1 and rank == 0 and tid == 0:
        ptx.mbarrier_arrive_cluster(ptx.mapa(base + BAR(0), 1))
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if tid == 0:
        if rank == 0 and bug == 0:
            ptx.mbarrier_arrive_cluster(ptx.mapa(base + BAR(0), 1))
        if rank == 1:
            ptx.mbarrier_wait_cluster(base + BAR(0), 0)
            ptx.mbarrier_arrive_cluster(ptx.mapa(base + BAR(0), 0))
        if rank == 0:
            ptx.mbarrier_wait_cluster(base + BAR(0), 0)
            out[0] = 1
    ptx.cluster_arrive()
    ptx.cluster_wait()


def test_remote_arrive_before_the_cluster_barrier():
    out = np.zeros(1, np.uint32)
    run(k_remote_arrive_after_wait, (out, 0), block=32, grid=2, cluster=2)
    assert out[0] == 1
    with pytest.raises(PeerNotRunning, match=r"mbarrier\.arrive \(cluster\) by thread 0 .* peer CTA \(1,0,0\) \[cluster 0 rank 1\]"):
        run(k_remote_arrive_after_wait, (np.zeros(1, np.uint32), 1), block=32, grid=2, cluster=2)


def k_scope(out, scope):
    """Rank 0 arrives remotely on rank 1's barrier; rank 1 waits on it with CTA scope (scope 0: reported),
    the relaxed cluster form (1) or the cluster acquire (2)."""
    smem = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    rank = ptx.cluster_ctarank()
    tid = cuda.threadIdx.x
    if tid == 0:
        ptx.mbarrier_init(base + BAR(0), 1)
        ptx.fence_mbarrier_init()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if rank == 0 and tid == 0:
        ptx.mbarrier_arrive_cluster(ptx.mapa(base + BAR(0), 1))
    if rank == 1 and tid == 0:
        if scope == 0:
            ptx.mbarrier_wait(base + BAR(0), 0)
        elif scope == 1:
            ptx.mbarrier_wait_relaxed_cluster(base + BAR(0), 0)
        else:
            ptx.mbarrier_wait_cluster(base + BAR(0), 0)
        out[0] = 1
    ptx.cluster_arrive()
    ptx.cluster_wait()


@pytest.mark.parametrize("policy", POLICIES)
def test_cta_scope_wait_on_a_remote_arrival(policy):
    from gemm_kernels.emu import WaitScopeMismatch

    for scope in (1, 2):
        out = np.zeros(1, np.uint32)
        run(k_scope, (out, scope), block=32, grid=2, cluster=2, policy=policy)
        assert out[0] == 1
    with pytest.raises(WaitScopeMismatch, match=r"thread 0 .* rank 1\] waited at tests/test_emu_peer_running\.py:\d+ "
                       r"\(k_scope\) with CTA scope .* from thread 0 .* rank 0\] of another CTA"):
        run(k_scope, (np.zeros(1, np.uint32), 0), block=32, grid=2, cluster=2, policy=policy)


def test_chapter8_cta_scope_wait_is_reported():
    """Chapter 8's MMA warp waiting on ld2mma (the peer's writeback warps arrive on it) with CTA scope."""
    from gemm_kernels.emu import WaitScopeMismatch

    narrow = book_helpers.variant(8, {"pipeline.wait_cluster(base + LD2MMA, acc, acc_phase)":
                                      "pipeline.wait(base + LD2MMA, acc, acc_phase)"})
    with pytest.raises(WaitScopeMismatch, match="ld2mma"):
        narrow.entry(*random_operands(256, 768, 64), backend="emulator", num_clusters=1)  # 3 tiles, 2 accumulators
