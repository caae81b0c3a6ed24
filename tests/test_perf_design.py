"""perf.Design and perf.predict: each chapter's kernel is one design, a design that cannot fit is
refused with its reason, and the analytic share agrees with the emulator's share on the chapters'
designs (the stored predictions) closely enough to speak for designs no chapter implements."""
import pytest

from gemm_kernels import perf
from gemm_kernels.chapters import CHAPTERS
from gemm_kernels.perf import predictions
from gemm_kernels.perf.design import CHAPTER_DESIGNS, Design


@pytest.mark.parametrize("chapter", sorted(CHAPTER_DESIGNS))
def test_chapter_design_is_the_kernel(chapter):
    """The design's fields say what the chapter's module says (tile, pair, consumers, depth, accumulators)."""
    d = CHAPTER_DESIGNS[chapter]
    mod = CHAPTERS[chapter]._mod()
    assert d.check() is d
    assert d.chapter_config() == (chapter, {})
    pair = hasattr(mod, "CLUSTER_M")
    assert d.cta_group == (2 if pair else 1)
    assert d.unit_tile == ((mod.CLUSTER_M, mod.CLUSTER_N) if pair else (mod.BLOCK_M, mod.BLOCK_N))
    assert d.tile_k == mod.BLOCK_K
    assert d.consumers == getattr(mod, "CONSUMERS", 1)
    cfg = CHAPTERS[chapter].config
    if "pipe_depth" in cfg:
        assert d.stages == cfg["pipe_depth"]
    acc = cfg.get("acc_stages", getattr(mod, "ACC_STAGES", 1))
    assert d.accumulators == acc
    assert d.persistent == ("num_ctas" in cfg or "num_clusters" in cfg)
    assert d.tmem_alloc == getattr(mod, "TMEM_COLS", getattr(mod, "ACC_COLS", 128) * acc)


@pytest.mark.parametrize("changes, words", [
    (dict(stages=9), "shared memory"),
    (dict(accumulators=4), "TMEM"),
    (dict(tile_n=264), "tile_n=264"),
    (dict(consumers=3), "consumers"),
    (dict(accumulators=1, epilogue="overlapped"), "overlapped epilogue"),
    (dict(multicast=8), "cluster"),
    (dict(scheduler="dynamic"), "scheduler must be one of"),
])
def test_refused_with_the_reason(changes, words):
    d = CHAPTER_DESIGNS[8].with_(**changes)
    assert d.chapter is None  # a changed design is no longer the chapter's kernel
    with pytest.raises(ValueError, match=words):
        perf.predict(d, 4096, 4096, 4096)


def test_settable_fields_keep_the_kernel():
    """A depth or accumulator count the kernel takes keeps the emulator's share; anything else is analytic."""
    assert CHAPTER_DESIGNS[7].with_(stages=4).chapter_config() == (7, {"pipe_depth": 4})
    assert CHAPTER_DESIGNS[8].with_(accumulators=1, epilogue="serial").chapter_config() == (8, {"acc_stages": 1})
    assert CHAPTER_DESIGNS[10].with_(tile_n=128).chapter_config() is None


def test_bad_shape_is_refused_before_the_model():
    with pytest.raises(ValueError, match="multiple of 8"):
        perf.predict(CHAPTER_DESIGNS[10].with_(tile_n=128), 4096, 4096, 4100)


def test_analytic_share_agrees_with_the_emulator():
    """On the chapters' own designs at the book's sizes (stored emulator predictions), the analytic
    share is within 15% for the warp-specialised and persistent steps, and within 25% for the rest."""
    data = predictions.load()
    worst = {}
    for r in data["results"]:
        if r["m"] != r["n"] or r["m"] not in predictions.BOOK_SIZES or r.get("tmem_cols"):
            continue
        d = perf.chapter_design(r["chapter"], r["pipe_depth"])
        a = perf.predict(d, r["m"], r["n"], r["k"], engine="analytic", with_range=False)
        off = abs(a.tflops / r["tflops"] - 1)
        worst[(r["chapter"], r["pipe_depth"], r["m"])] = off
        assert off < (0.15 if d.warp_specialized else 0.25), (r["chapter"], r["pipe_depth"], r["m"], a.tflops, r["tflops"])
    assert len(worst) >= 20


def test_prediction_carries_range_limit_and_split():
    d = Design(tile_m=128, tile_n=128, cta_group=2, stages=8, accumulators=4, warp_specialized=True,
               persistent=True, epilogue="overlapped", raster_group=8)
    p = perf.predict(d, 4096, 4096, 4096)
    assert p.engine == "analytic"
    assert p.tflops_low < p.tflops < p.tflops_high
    assert set(p.split) >= {"launch", "fill", "steady", "epilogue"}
    assert abs(sum(p.split.values()) - p.time_us) < 0.01 * p.time_us
    assert p.bottleneck in ("tensor core", "TMA", "L2", "shared memory", "HBM", "latency", "launch overhead")
    assert "MODEL" in perf.describe(p)


def test_k_split_fills_the_last_wave():
    """Step 10 at 4096^3: 256 pair tiles on 74 pairs leave the last wave partly empty (86.5% at best);
    a K-split of the last wave spreads its k-blocks over every pair and the model's figure rises."""
    base = CHAPTER_DESIGNS[10]
    a = perf.predict(base, 4096, 4096, 4096, engine="analytic", with_range=False)
    b = perf.predict(base.with_(k_split="last-wave"), 4096, 4096, 4096, with_range=False)
    assert round(a.wave_busy, 3) == 0.865
    assert b.tflops > a.tflops and b.util["tensor core"] > a.util["tensor core"]
    assert b.split["split_k"] > 0


def test_step10_choice_by_the_model():
    """The model's host-side choice for step 10: the K-split of the last wave at 4096^3 and at the
    ragged 4000 x 3000 x 4096, the tile as written where the last wave is the only one (2048^3)."""
    from gemm_kernels.perf.choose import best, step10_variants

    variants = step10_variants()
    assert best(variants, 4096, 4096, 4096)[0] == "K-split, last wave"
    assert best(variants, 4000, 3000, 4096)[0] == "K-split, last wave"
    assert best(variants, 2048, 2048, 2048)[0] == "as written (256 x 256)"
