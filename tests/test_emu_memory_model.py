"""The PTX memory model where the chapters depend on it (issue 27): a ``.relaxed`` mbarrier wait acquires
nothing, a generic access before an async-proxy write of the same bytes needs ``fence.proxy.async``, and
``clusterlaunchcontrol.try_cancel`` takes the issuing CTA's own addresses. Each rule planted in a small
kernel, its report naming the line where the fix goes; the correct form of each kernel passes."""
import inspect
import re

import numpy as np
import pytest
from numba import cuda, uint8, uint32

from gemm_kernels import emu, ptx
from gemm_kernels.emu.clc import ClcRuleError
from gemm_kernels.emu.errors import RelaxedWaitNoAcquire

from tests.emu_kernels import BAR, DATA, run

POLICIES = ["lazy", "eager", "random"]
ACQUIRE, RELAXED, RELAXED_THEN_BAR = range(3)


def k_publish(out, form):
    """Warp 1 stores a word and arrives (release); warp 0 waits on the phase (``form``) and reads it."""
    smem = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    if tid == 0:
        ptx.mbarrier_init(base + BAR(0), 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if tid == 32:
        smem[DATA // 4] = 7
        ptx.mbarrier_arrive(base + BAR(0))
    if tid < 32:
        if form == ACQUIRE:
            ptx.mbarrier_wait(base + BAR(0), 0)
        else:
            ptx.mbarrier_wait_relaxed_cluster(base + BAR(0), 0)  # the wait the report names
        if form == RELAXED_THEN_BAR:
            ptx.named_barrier_sync(1, 32)  # a barrier orders what the relaxed wait observed (stronger than the ISA)
        out[tid] = smem[DATA // 4]


def _line(fn, snippet):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if snippet in line)


@pytest.mark.parametrize("policy", POLICIES)
def test_relaxed_wait_acquires_nothing(policy):
    out = np.zeros(32, np.uint32)
    run(k_publish, (out, ACQUIRE), block=64, policy=policy)
    assert (out == 7).all()
    run(k_publish, (out, RELAXED_THEN_BAR), block=64, policy=policy)
    with pytest.raises(RelaxedWaitNoAcquire) as err:
        run(k_publish, (np.zeros(32, np.uint32), RELAXED), block=64, policy=policy)
    first = str(err.value).splitlines()[0]
    wait = _line(k_publish, "the wait the report names")
    assert first.startswith(f"the wait at tests/test_emu_memory_model.py:{wait} (k_publish) is relaxed"), first
    assert ".acquire.cta (ptx.mbarrier_wait" in first  # one CTA: the CTA-scope acquire orders it


def k_peer_try_cancel(bug):
    """A pair asks for a cluster; bug 1 passes the response address of the peer CTA (through mapa)."""
    smem = cuda.shared.array(0, uint8)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    rank = ptx.cluster_ctarank()
    if tid == 0:
        ptx.mbarrier_init(base + 16, 1)
        ptx.fence_mbarrier_init()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if tid == 0:
        if rank == 0:
            resp = ptx.mapa(base, 1) if bug else base
            ptx.mbarrier_arrive_expect_tx(base + 16, 16)
            ptx.mbarrier_arrive_expect_tx_cluster(ptx.mapa(base + 16, 1), 16)
            ptx.clc_try_cancel_multicast(resp, base + 16)
        ptx.mbarrier_wait_cluster(base + 16, 0)
        ptx.clc_query_cancel(base)
    ptx.cluster_arrive()
    ptx.cluster_wait()


@pytest.mark.parametrize("policy", POLICIES)
def test_try_cancel_takes_the_issuing_ctas_address(policy):
    def go(bug):
        emu.run(k_peer_try_cancel, 4, 32, (bug,), cluster=2, shared_bytes=64, resident=1, policy=policy,
                names=[("CLC response", 0, 16), ("clc_full", 16, 8)])

    go(0)
    with pytest.raises(ClcRuleError, match=r"try_cancel at tests/test_emu_memory_model.py:\d+ \(k_peer_try_cancel\) "
                                           r"with the response address 0x1000400, which names shared memory of CTA "
                                           r"\(1,0,0\)"):
        go(1)


def test_relaxed_wait_report_names_the_form_for_a_cluster():
    """In a cluster the report asks for the cluster-scope acquire."""
    from gemm_kernels.emu import relaxed

    class Bar:
        name = "full[0]"
        cta = type("C", (), {"cluster": type("K", (), {"size": 2})(), "rank_text": lambda self: "(0,0,0)"})()

    with pytest.raises(RelaxedWaitNoAcquire, match=re.escape(".acquire.cluster (pipeline.wait_acquire_cluster")):
        relaxed.report(("thread 0", Bar(), 0, None, 0), "a load", "a store")


# step 10's scheduler as it was before issue 27 (schedule.clc_next): a relaxed wait on clc_full, then an
# ordinary load of the response, and no fence.proxy.async before the slot goes back
OLD_CLC_NEXT = '''
def clc_next(resp0, full0, leader_empty0, count):
    stage, phase = pipeline.ring_slot(count, CLC_STAGES)
    pipeline.wait_cluster(full0, stage, phase)  # OLD: relaxed.cluster
    ok, first_x = ptx.clc_query_cancel(pipeline.stage_buffer(resp0, stage, RESPONSE_BYTES))
    if ptx.elect_sync():
        ptx.mbarrier_arrive_remote(pipeline.barrier(leader_empty0, stage))
    return ok, uint32(first_x >> uint32(1))
'''


def _old_step10():
    import types

    from gemm_kernels import book_helpers, schedule

    old = types.ModuleType("schedule")
    old.__dict__.update(schedule.__dict__)
    ns = dict(schedule.__dict__)
    exec(compile(OLD_CLC_NEXT, "<variant of gemm_kernels/schedule.py>", "exec"), ns)  # noqa: S102
    old.clc_next = cuda.jit(device=True, forceinline=True)(ns["clc_next"])
    v = book_helpers.variant(10, {})
    v.entry.__globals__["schedule"] = old
    return v


@pytest.mark.parametrize("policy", POLICIES)
def test_old_step10_scheduler_is_reported(policy):
    """The relaxed wait on clc_full (issue 27's hang) is named at its line, with the acquiring form."""
    from gemm_kernels.check import random_operands

    v = _old_step10()
    with pytest.raises(RelaxedWaitNoAcquire) as err:
        v.entry(*random_operands(256, 512, 64), backend="emulator", policy=policy, num_clusters=1)
    first = str(err.value).splitlines()[0]
    wait = 1 + OLD_CLC_NEXT.splitlines().index(next(x for x in OLD_CLC_NEXT.splitlines() if "# OLD" in x))
    assert first.startswith("the wait at <variant of gemm_kernels/kernels/v10_any_shape.py>:"), first
    assert f"in <variant of gemm_kernels/schedule.py>:{wait} (clc_next), in gemm_kernels/pipeline.py" in first, first
    assert "Wait with .acquire.cluster" in first, first


def test_emu_modules_import_without_a_cycle_and_at_the_top():
    """Issue 27: no import cycle inside gemm_kernels/emu, and no import inside a function there (a
    reader finds a module's dependencies at its top) unless a reason is written beside it (a
    comment on its line that starts "why inside" or "(same)")."""
    import ast
    from pathlib import Path

    emu_dir = Path(__file__).resolve().parents[1] / "gemm_kernels" / "emu"
    graph, inner = {}, []
    for path in emu_dir.glob("*.py"):
        source = path.read_text().splitlines()
        tree = ast.parse("\n".join(source))
        top = {id(n) for n in tree.body}
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                reason = "# why inside" in source[node.lineno - 1] or "# (same)" in source[node.lineno - 1]
                if id(node) not in top and not reason:
                    inner.append(f"{path.name}:{node.lineno}")
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    deps.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
        graph[path.stem] = deps
    assert not inner, f"imports inside functions: {inner}"

    def cycle_from(mod, stack):
        for dep in graph.get(mod, ()):
            if dep in stack:
                return stack[stack.index(dep):] + [dep]
            found = cycle_from(dep, stack + [dep])
            if found:
                return found
        return None

    for mod in graph:
        assert cycle_from(mod, [mod]) is None, f"import cycle: {' -> '.join(cycle_from(mod, [mod]))}"
