"""Every chapter's kernel on the emulator against numpy, on shapes that exercise its edges, under
two or more completion orders of the asynchronous units."""
import numpy as np
import pytest

from gemm_kernels import CHAPTERS
from gemm_kernels.check import compare, random_operands

POLICIES = ["lazy", "eager", "random"]

# (chapter, (M, N, K), config): K chunks of 64 against PIPE_DEPTH (2 unless set): fewer, equal,
# more, odd and even; several tiles in each dimension; more tiles than persistent CTAs.
CASES = [
    (1, (128, 128, 64), {}),
    (2, (128, 128, 64), {}),
    (2, (128, 128, 128), {}),
    (2, (128, 128, 320), {}),  # 5 chunks: odd
    (3, (256, 384, 128), {}),  # 2 x 3 tiles, non-square
    (4, (256, 128, 192), {}),
    (5, (128, 256, 64), {}),  # 1 chunk < depth
    (5, (256, 128, 128), {}),  # 2 chunks = depth
    (5, (128, 128, 320), {}),  # 5 chunks, odd, wraps the ring 2.5 times
    (5, (128, 128, 256), {"pipe_depth": 3}),  # 4 chunks, not a multiple of 3
    (6, (512, 384, 192), {}),  # 12 tiles over 3 CTAs, 3 chunks (odd) per tile
    (6, (384, 256, 256), {"num_ctas": 4, "group": 2}),  # 6 tiles over 4 CTAs: uneven
    (7, (512, 384, 192), {}),  # depth 4, 3 chunks (< depth, odd), 12 tiles over 3 CTAs
    (7, (256, 256, 320), {"pipe_depth": 2}),  # depth 2, 5 chunks: odd, wraps the ring
    (7, (384, 128, 256), {"pipe_depth": 4, "num_ctas": 2, "acc_stages": 1}),  # 4 chunks = depth; one accumulator
    (8, (512, 768, 192), {}),  # 6 cluster tiles over 2 clusters, 3 chunks
    (8, (256, 512, 320), {"pipe_depth": 2, "acc_stages": 1}),  # 5 chunks, depth 2, one accumulator
    (9, (1024, 512, 192), {}),  # 4 cluster tiles (512 x 256) over 2 clusters
    (9, (512, 768, 128), {"pipe_depth": 3, "num_clusters": 2}),  # 3 tiles over 2 clusters, 2 chunks
]


def _id(case):
    ch, (m, n, k), cfg = case
    extra = "-".join(f"{k}{v}" for k, v in cfg.items())
    return f"v{ch}-{m}x{n}x{k}" + (f"-{extra}" if extra else "")


@pytest.mark.parametrize("policy", POLICIES[:2])
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_chapter_matches_numpy(case, policy):
    ch, (m, n, k), cfg = case
    a, b = random_operands(m, n, k, seed=ch)
    d = CHAPTERS[ch].entry(a, b, backend="emulator", policy=policy, **cfg)
    res = compare(d, a, b)
    assert res.ok, res.report()


@pytest.mark.parametrize("ch", sorted(CHAPTERS))
def test_chapter_random_order(ch):
    m, n, k = CHAPTERS[ch].test_shape
    a, b = random_operands(m, n, k, seed=10 + ch)
    for seed in (1, 2):
        d = CHAPTERS[ch].entry(a, b, backend="emulator", policy="random", seed=seed)
        res = compare(d, a, b)
        assert res.ok, res.report()


# persistent chapters at a B200's launch geometry: min(148, tiles) CTAs (74 pair clusters), one tile each
B200_CASES = [(6, (256, 256, 128)), (7, (256, 256, 128)), (8, (256, 512, 128)), (9, (512, 512, 128))]


@pytest.mark.parametrize("ch, shape", B200_CASES, ids=[f"v{c}" for c, _ in B200_CASES])
def test_persistent_chapter_at_the_b200_launch(ch, shape):
    from gemm_kernels.emu.check_mode import b200_launch

    a, b = random_operands(*shape, seed=20 + ch)
    config = b200_launch(CHAPTERS[ch].entry)
    assert config is not None
    for policy, seed in (("lazy", 0), ("random", 1)):
        d = CHAPTERS[ch].entry(a, b, backend="emulator", policy=policy, seed=seed, **config)
        res = compare(d, a, b)
        assert res.ok, res.report()


def test_check_could_fail():
    """The comparison itself catches a wrong tile (so the tests above can fail)."""
    a, b = random_operands(128, 128, 64)
    d = CHAPTERS[1].entry(a, b, backend="emulator")
    d[5, 7] += np.float16(0.25)
    assert not compare(d, a, b).ok


def test_trace_returned():
    a, b = random_operands(128, 128, 192, seed=3)
    run = CHAPTERS[5].entry(a, b, backend="emulator", trace=True)
    assert compare(run.d, a, b).ok
    ops = {e.op for e in run.launch.trace.events}
    assert {"tma.load", "mma", "wait", "tmem.ld", "tma.store"} <= ops


def test_reset_phase_variant_is_reported():
    """Resetting the phases at each persistent tile (the seed's V6) with an odd number of K chunks:
    the emulator names the stale wait (lazy) or the hang it causes (eager), with the stale wait's class under
    both orders (issue 27: one class per bug)."""
    from gemm_kernels.book_helpers import variant
    from gemm_kernels.emu import StalePhaseWait
    from gemm_kernels.exercises import RESET_PHASES

    reset = variant(6, RESET_PHASES).entry

    a, b = random_operands(256, 384, 192, seed=4)  # 3 chunks per tile: odd
    with pytest.raises(StalePhaseWait, match="mma2tma"):
        reset(a, b, backend="emulator", policy="lazy")
    with pytest.raises(StalePhaseWait, match="deadlock in cluster 0: .*mma2tma.*completed unseen"):
        reset(a, b, backend="emulator", policy="eager")
    # with an even number of chunks per tile the reset happens to be harmless
    a, b = random_operands(256, 384, 256, seed=4)
    d = reset(a, b, backend="emulator", policy="lazy")
    assert compare(d, a, b).ok
