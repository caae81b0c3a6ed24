"""`bench --backend model`: the table is labelled MODEL and the JSON keeps its contract."""
import json
import subprocess
import sys

from gemm_kernels import perf

ROW_KEYS = {"chapter", "m", "n", "k", "pipe_depth", "tflops", "tflops_low", "tflops_high", "kind", "bottleneck",
            "util_tensor_core", "util_tma", "util_smem", "util_l2_hbm"}
UNITS = {"tensor core", "TMA", "L2", "HBM", "shared memory", "latency", "launch overhead"}


def test_bench_model_json_contract(tmp_path):
    out = tmp_path / "model.json"
    res = subprocess.run([sys.executable, "-m", "gemm_kernels", "bench", "--backend", "model", "--chapters", "4,7,8",
                          "--sizes", "512,1024", "--pipe-depth", "2,4", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("MODEL:") and perf.MODEL_LABEL in res.stdout and "MODEL TFLOP/s (range)" in res.stdout
    data = json.loads(out.read_text())
    assert data["kind"] == "model" and data["model"] is True and data["label"].startswith("MODEL")
    rows = data["results"]
    # chapter 4 takes no depth (once per size); 7 and 8 take 2 and 4; 8 needs multiples of 256
    want = {(4, 512, None), (4, 1024, None), (7, 512, 2), (7, 512, 4), (7, 1024, 2), (7, 1024, 4),
            (8, 512, 2), (8, 512, 4), (8, 1024, 2), (8, 1024, 4)}
    assert {(r["chapter"], r["m"], r["pipe_depth"]) for r in rows} == want
    for r in rows:
        assert ROW_KEYS <= set(r), ROW_KEYS - set(r)
        assert r["kind"] == "model" and r["m"] == r["n"] == r["k"]
        assert r["bottleneck"] in UNITS
        assert 0 < r["tflops_low"] <= r["tflops"] <= r["tflops_high"]
        assert all(0 <= r[u] <= 1.0 for u in ("util_tensor_core", "util_tma", "util_smem"))
        assert r["util_l2_hbm"] >= 0
    assert {p["name"] for p in data["parameters"]} >= {"sm_count", "clock_ghz", "hbm_bytes_per_s"}
    assert all(p["source"] for p in data["parameters"])


def test_bench_model_refuses_a_chapter_it_cannot_model():
    res = subprocess.run([sys.executable, "-m", "gemm_kernels", "bench", "--backend", "model", "--chapters", "2",
                          "--sizes", "1024"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "chapters 4-10" in res.stderr
