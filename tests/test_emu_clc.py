"""The emulator's cluster launch control unit (gemm_kernels/emu/clc.py): a grid with more clusters
than run at once, cancelled clusters that never start, 16-byte responses completed on an mbarrier,
and the PTX ISA's rules, each planted in a small kernel and named in the report."""
import numpy as np
import pytest
from numba import cuda, uint8, uint32

from gemm_kernels import emu, ptx
from gemm_kernels.emu.clc import ClcRuleError
from gemm_kernels.emu.errors import UndrainedArrival

RESP, BAR = 0, 16  # offsets in dynamic shared memory: the 16-byte response, then its mbarrier
SHARED = 64

OK, ASK_AFTER_FAILURE, EXIT_IN_FLIGHT, READ_EARLY, NO_PROXY_FENCE = range(5)


def clc_kernel(ran, took, bug):
    """One CTA per cluster. Each cluster records that it ran, then takes clusters from the waiting ones
    until a request fails, recording which cluster took which. ``bug`` plants one broken rule."""
    smem = cuda.shared.array(0, uint8)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    me = cuda.blockIdx.x
    if tid == 0:
        ptx.mbarrier_init(base + BAR, 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid < 32:
        ran[me] = 1
        phase = uint32(0)
        more = uint32(1)
        while more:
            if ptx.elect_sync():
                ptx.mbarrier_arrive_expect_tx(base + BAR, 16)
                ptx.clc_try_cancel_multicast(base + RESP, base + BAR)
            if bug == EXIT_IN_FLIGHT:
                return  # the response is still in flight when the CTA exits
            if bug != READ_EARLY:
                ptx.mbarrier_wait(base + BAR, phase)
            phase ^= uint32(1)
            more, x = ptx.clc_query_cancel(base + RESP)
            if bug != NO_PROXY_FENCE:
                ptx.fence_proxy_async()  # the generic read before the next response's async write (PTX ISA)
            if more:
                took[x] = me + 1
            elif bug == ASK_AFTER_FAILURE:
                bug = OK
                more = uint32(1)  # asks once more after the failed response


def run(bug=OK, clusters=6, resident=2, policy="lazy", seed=0):
    ran = np.zeros(clusters, np.uint32)
    took = np.zeros(clusters, np.uint32)
    emu.run(clc_kernel, clusters, 64, (ran, took, bug), shared_bytes=SHARED, resident=resident, policy=policy,
            seed=seed, names=[("CLC response", RESP, 16), ("clc_full", BAR, 8)])
    return ran, took


@pytest.mark.parametrize("policy", ["lazy", "random"])
def test_cancelled_clusters_never_start(policy):
    ran, took = run(policy=policy)
    assert list(ran[:2]) == [1, 1], "the resident clusters run"
    assert not ran[2:].any(), f"a cancelled cluster started: {ran}"
    assert (took[2:] > 0).all() and not took[:2].any(), f"every waiting cluster taken once: {took}"
    if policy == "random":  # the first to ask takes them all
        assert list(took[2:]) == [1, 1, 1, 1]


@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_uneven_shares_under_every_policy(policy):
    """Under lazy and eager too the resident clusters' shares of the waiting ones are uneven (a seeded
    draw at launch: the same seed gives the same shares), never the static schedule's even split."""
    shares = []
    for seed in range(4):
        _, took = run(clusters=10, policy=policy, seed=seed)
        assert (took[2:] > 0).all()
        assert list(took) == list(run(clusters=10, policy=policy, seed=seed)[1]), "the same seed, the same shares"
        shares.append(tuple(int((took == c).sum()) for c in (1, 2)))
    assert any(a != b for a, b in shares), f"every seed split the 8 waiting clusters evenly: {shares}"
    assert len(set(shares)) > 1, f"every seed gave the same shares: {shares}"


@pytest.mark.parametrize("policy", ["lazy", "eager", "random"])
def test_response_read_without_proxy_fence_before_the_next_request(policy):
    """A generic read of the response, then the next try_cancel's async write of the same bytes, without
    fence.proxy.async between them: the report names the read."""
    with pytest.raises(Exception, match=r"fence.proxy.async is missing after the ordinary load at "
                                        r"tests/test_emu_clc.py:\d+ \(clc_kernel\)") as e:
        run(NO_PROXY_FENCE, policy=policy)
    assert type(e.value).__name__ == "MissingProxyFence"


def test_without_resident_every_request_fails():
    """All clusters fit at once (resident = the grid): nothing waits, every response is a failure."""
    ran, took = run(clusters=3, resident=3)
    assert ran.all() and not took.any()


def test_request_after_a_failed_response():
    with pytest.raises(ClcRuleError, match="after CTA .* had observed a failed response"):
        run(ASK_AFTER_FAILURE)


def test_cta_exits_before_the_response_lands():
    with pytest.raises(UndrainedArrival, match="clusterlaunchcontrol.try_cancel"):
        run(EXIT_IN_FLIGHT)


def test_response_read_before_its_barrier_completes():
    with pytest.raises(ClcRuleError, match="read a try_cancel response at .*test_emu_clc.py.* before its mbarrier phase completed"):
        run(READ_EARLY)
