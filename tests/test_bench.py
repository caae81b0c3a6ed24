"""bench and trace CLIs on a machine without a B200 (refusal, the emulator's labelled model, PNGs),
and their -m blackwell smoke tests (skipped without a B200)."""
import json

import pytest

from gemm_kernels import bench
from gemm_kernels.cli import main
from gemm_kernels.runtime.device import gpu_info

_info = gpu_info()
_b200 = _info is not None and tuple(_info.compute_capability) == (10, 0)


@pytest.mark.skipif(_b200, reason="a B200 is present: bench runs instead of refusing")
def test_bench_refuses_without_a_b200(capsys):
    assert main(["bench", "--chapters", "7", "--sizes", "2048"]) == 2
    err = capsys.readouterr().err
    assert "refusing" in err and "B200" in err and "--backend emulator" in err


def test_bench_emulator_is_labelled_a_model(tmp_path, capsys):
    js, png = tmp_path / "b.json", tmp_path / "b.png"
    assert main(["bench", "--backend", "emulator", "--chapters", "1", "--json", str(js), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("MODEL:") and "model TFLOP/s" in out
    d = json.loads(js.read_text())
    assert d["model"] is True and d["kind"] == "model" and d["label"].startswith("MODEL")
    r = d["results"][0]
    assert r["kind"] == "model" and r["verified"] is True and r["tflops"] > 0 and (r["m"], r["n"], r["k"]) == (128, 128, 64)
    assert png.stat().st_size > 1000


def test_shapes_and_chapter_lists():
    assert bench.parse_chapters("1-3,7,9") == [1, 2, 3, 7, 9]
    assert bench.shapes_for(1, (2048, 4096)) == [(128, 128, 64)]
    assert bench.shapes_for(2, (2048,)) == [(128, 128, 2048)]
    assert bench.shapes_for(9, (2048, 4096, 8192)) == [(2048,) * 3, (4096,) * 3, (8192,) * 3]
    assert bench.shapes_for(8, (2048, 3000)) == [(2048,) * 3]  # 3000 is not a multiple of the 256 tile


def test_plot_title_says_model(tmp_path):
    rep = bench.Report("model", bench.MODEL_LABEL, results=[bench.Result("chapter 4", 4, 256, 384, 192, 12.0,
                                                                         median_ms=3e-3, kind="model")])
    assert "MODEL" in bench.table(rep).splitlines()[0]
    bench.plot(rep, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_trace_cli_writes_a_png(tmp_path, capsys):
    out = tmp_path / "t.png"
    assert main(["trace", "--chapter", "4", "--out", str(out), "--json", str(tmp_path / "t.json")]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "virtual time (model)" in capsys.readouterr().out
    assert json.loads((tmp_path / "t.json").read_text())["events"]


@pytest.mark.skipif(_b200, reason="a B200 is present")
def test_trace_blackwell_refuses_without_a_b200(tmp_path, capsys):
    assert main(["trace", "--chapter", "7", "--out", str(tmp_path / "x.png"), "--backend", "blackwell"]) == 2
    assert "B200" in capsys.readouterr().err


# -- on a B200 ------------------------------------------------------------------------------------

@pytest.mark.blackwell
def test_bench_smoke_on_b200(tmp_path):
    js = tmp_path / "b.json"
    assert main(["bench", "--chapters", "1,7", "--sizes", "2048", "--rounds", "1", "--reps", "2", "--warmup", "1",
                 "--json", str(js), "--plot", str(tmp_path / "b.png")]) == 0
    d = json.loads(js.read_text())
    assert d["model"] is False
    names = {r["name"] for r in d["results"]}
    assert {"chapter 1", "chapter 7"} <= names
    assert all(r["verified"] for r in d["results"]) and all(r["tflops"] > 0 for r in d["results"])


@pytest.mark.blackwell
def test_trace_smoke_on_b200(tmp_path):
    """On-chip timeline of chapter 7: stamps decoded into the emulator's event kinds."""
    trace, ok, text = bench.chapter_gpu_trace(7, 512, 384, 192)
    assert ok, text
    ops = {e.op for e in trace.events}
    assert {"wait", "tma.issue", "commit", "tmem.ld"} <= ops, ops
    assert trace.dropped == 0
    assert main(["trace", "--chapter", "7", "--backend", "blackwell", "--out", str(tmp_path / "t.png")]) == 0


@pytest.mark.blackwell
def test_guard_passes_a_correct_chapter_on_b200():
    """The guarded build of chapter 7 runs to completion and records nothing."""
    from gemm_kernels.check import random_operands
    from gemm_kernels.instrument import launch_guarded

    a, b = random_operands(512, 384, 192)
    cap = bench.capture_launch(7, a, b)
    launch_guarded(cap.kernel, cap.grid, cap.block, cap.args, regions=cap.regions, shared_bytes=cap.shared_bytes,
                   cluster=cap.cluster)
