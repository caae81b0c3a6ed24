"""Every host path written for a B200 runs here, on the fake GPU of tests/fake_gpu: each chapter's
entry with backend="blackwell" (its kernel run on the emulator against the fake device memory, and
its launch checked against the driver's rules), the benchmark with every option, verify and trace
with --backend blackwell, the instrumented timeline build and the hang guard's host side.

What runs is the real host code; only the CUDA driver, cuda.core's launch, numba-cuda's device
memory and CuPy are replaced."""
from __future__ import annotations

import gc
import json
import struct

import numpy as np
import pytest
from numba.core import sigutils

from gemm_kernels import CHAPTERS, bench
from gemm_kernels.check import compare, random_operands
from gemm_kernels.cli import main
from tests.fake_gpu import FakeGpu, FakeIllegalAddress, execute
from tests.fake_gpu.spec import B200, H200

@pytest.fixture
def gemm_gpu(monkeypatch):
    """A fake B200 on which a chapter kernel's launch writes the correct D (numpy)."""
    gpu = FakeGpu(executor=execute.numpy_gemm).install(monkeypatch)
    yield gpu
    FakeGpu.reset_caches()


@pytest.fixture
def emulating_gpu(monkeypatch):
    """A fake B200 that runs each launched kernel on the emulator, against its fake memory."""
    gpu = FakeGpu(executor=execute.emulated).install(monkeypatch)
    yield gpu
    FakeGpu.reset_caches()


# -- each chapter's entry with backend="blackwell" ------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_chapter_gpu_path_runs_its_kernel(chapter, emulating_gpu):
    """The B200 path (upload, tensor maps, smem attribute, cluster launch, copy back) of the chapter,
    with the launched kernel itself run on the emulator: D must match numpy."""
    ch = CHAPTERS[chapter]
    m, n, k = ch.test_shape
    a, b = random_operands(m, n, k, seed=3)
    d = ch.entry(a, b, backend="blackwell")
    res = compare(d, a, b)
    assert res.ok, res.report()
    (launch,) = emulating_gpu.kernel_launches()
    assert launch.kernel == ch.kernel.py_func.__name__
    if chapter >= 4:
        maps = [launch.tensor_maps[i] for i in range(3)]
        assert [t.rows_cols[0] for t in maps] == [(m, k), (n, k), (m, n)], "A, B, D maps in argument order"
        assert [t.swizzle for t in maps[:2]] == ["CU_TENSOR_MAP_SWIZZLE_128B"] * 2, "operands: 128B swizzle"
        # D: the staging swizzle the kernel plans (128B for whole-row staging, 64B for 32-column subtiles)
        swz = ch.kernel.py_func.__globals__.get("SUBTILE_SWIZZLE", "128B")
        assert maps[2].swizzle == f"CU_TENSOR_MAP_SWIZZLE_{swz}"


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_gpu_launch_compiles_the_signature_the_book_builds(chapter, gemm_gpu):
    ch = CHAPTERS[chapter]
    a, b = random_operands(*ch.test_shape, seed=0)
    ch.entry(a, b, backend="blackwell")
    (launch,) = gemm_gpu.kernel_launches()
    declared, _ = sigutils.normalize_signature(ch.signature)
    assert tuple(launch.argument_types) == tuple(declared)


@pytest.mark.parametrize("chapter, size, blocks, cluster", [
    (3, 2048, (16, 16, 1), (1, 1, 1)), (4, 2048, (16, 16, 1), (1, 1, 1)), (6, 2048, (148, 1, 1), (1, 1, 1)),
    (7, 2048, (148, 1, 1), (1, 1, 1)), (8, 2048, (128, 1, 1), (2, 1, 1)), (8, 4096, (148, 1, 1), (2, 1, 1)),
    (9, 4096, (148, 1, 1), (2, 1, 1))])
def test_grid_at_full_size(chapter, size, blocks, cluster, fake_b200):
    """One CTA per tile (3, 4); persistent chapters one CTA per SM of the B200's 148 (6, 7), or one
    pair per two SMs when there are tiles for them (64 pair tiles at 2048^3, 256 at 4096^3), no
    more clusters than can be resident (the grid reaches the driver in clusters)."""
    a = b = np.zeros((size, size), np.float16)  # nothing is computed (no executor): the launch is the point
    CHAPTERS[chapter].entry(a, b, backend="blackwell")
    (launch,) = fake_b200.kernel_launches()
    assert (launch.grid, launch.cluster) == (blocks, cluster)
    assert launch.shared_bytes <= B200.max_shared_per_block_optin


@pytest.mark.slow
def test_the_loaded_kernel_is_the_sm100a_build(monkeypatch):
    """With build=True the fake loads what runtime.build makes for sm_100a from the argument types the
    host passes (the cubin a B200 would load): its registers and static shared memory are what the
    launch path sees, and registers x threads must fit an SM."""
    gpu = FakeGpu(build=True, executor=execute.numpy_gemm).install(monkeypatch)
    try:
        a, b = random_operands(*CHAPTERS[9].test_shape, seed=0)
        assert compare(CHAPTERS[9].entry(a, b, backend="blackwell"), a, b).ok
    finally:
        FakeGpu.reset_caches()
    (launch,) = gpu.kernel_launches()
    handle = next(h for h in gpu.kernel_handles.values() if h.name == launch.kernel)
    b = handle.extra["build"]
    assert b.arch == "sm_100a" and b.count("UTCHMMA") > 0 and b.local_bytes == 0
    assert handle.registers == b.registers and handle.registers * launch.block[0] <= 65536


def test_a_grid_given_in_blocks_where_cuda_core_counts_clusters_is_caught(fake_b200, monkeypatch):
    """If runtime.launch passed the grid in blocks to cuda.core (which counts clusters), chapter 8
    would launch twice the CTAs: the fake sees the grid as the driver would."""
    from gemm_kernels.runtime import launch as rl

    monkeypatch.setattr(rl, "_grid_counts_clusters", lambda: False)
    a = b = np.zeros((4096, 4096), np.float16)
    CHAPTERS[8].entry(a, b, backend="blackwell")
    (launch,) = fake_b200.kernel_launches()
    assert launch.grid == (296, 1, 1)  # 148 expected: test_grid_at_full_size


def test_device_query_and_backend_choice(gemm_gpu):
    from gemm_kernels.kernels.host import choose_backend
    from gemm_kernels.runtime.device import gpu_info

    info = gpu_info()
    assert info.compute_capability == (10, 0) and info.sm_count == 148
    assert info.max_shared_per_block_optin == 232448
    assert choose_backend(None, 7) == "blackwell"


def test_backend_blackwell_on_an_h200_says_what_it_found(monkeypatch):
    FakeGpu(H200).install(monkeypatch)
    try:
        a, b = random_operands(256, 256, 128)
        with pytest.raises(RuntimeError, match=r"found NVIDIA H200 \(fake\) \(sm_90\); backend='blackwell' needs"):
            CHAPTERS[4].entry(a, b, backend="blackwell")
    finally:
        FakeGpu.reset_caches()


# -- the benchmark -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_bench_every_option(gemm_gpu, tmp_path, capsys):
    js, png = tmp_path / "b.json", tmp_path / "b.png"
    rc = main(["bench", "--chapters", "1,3,5-6,9", "--sizes", "256,512", "--warmup", "2", "--rounds", "3",
               "--reps", "2", "--pipe-depth", "2,3", "--json", str(js), "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert png.stat().st_size > 0
    rep = json.loads(js.read_text())
    assert rep["model"] is False and rep["device"]["name"] == B200.name
    assert rep["protocol"]["l2_flush_bytes"] == 2 * B200.l2_bytes
    assert rep["notes"] and "COMPUTE_TYPE_FP32" in rep["notes"][0] and gemm_gpu.cublas_compute_type == "fp32"
    names = [(r["name"], r["m"], r["k"]) for r in rep["results"]]
    expected = ([("chapter 1", 128, 64)] + [("chapter 3", s, s) for s in (256, 512)]
                + [(f"chapter {c} (depth {d})", s, s) for c in (5, 6, 9) for d in (2, 3) for s in (256, 512)
                   if c != 9 or s == 512]
                + [("cuBLAS (CuPy)", s, s) for s in (256, 512)])
    assert sorted(names) == sorted(expected)
    assert all(r["verified"] and r["samples"] == 3 * 2 for r in rep["results"]), rep["results"]
    _check_timed_protocol(gemm_gpu, entries=len(expected), warmup=2, rounds=3, reps=2)


def _check_timed_protocol(gpu, *, entries, warmup, rounds, reps):
    """Every timed interval (event record .. event record) holds exactly one launch, and a flush of
    the L2 (the fill kernel writing 2x L2) comes right before each."""
    log = gpu.log
    records = [i for i, (kind, _) in enumerate(log) if kind == "record"]
    assert len(records) == 2 * entries * rounds * reps
    # before timing: each entry's captured launch (checked against numpy), then its warm-up launches
    untimed = {}
    for kind, x in log[:records[0]]:
        if kind == "launch" and x.kernel != "fill":
            key = ((id(x.dispatcher), tuple(a if isinstance(a, int) else id(a) for a in x.args))
                   if x.dispatcher is not None else (x.kernel, x.extra["shape"]))  # one per captured launch
            untimed[key] = untimed.get(key, 0) + 1
    assert len(untimed) == entries and set(untimed.values()) == {1 + warmup}, untimed
    timed = []
    for start, end in zip(records[::2], records[1::2]):
        inside = [x for kind, x in log[start + 1:end] if kind == "launch"]
        assert len(inside) == 1, inside
        before = [x for kind, x in log[:start] if kind == "launch"][-1]
        assert before.kernel == "fill" and before.args[0].nbytes == 2 * gpu.spec.l2_bytes
        timed.append(inside[0].kernel)
    # order alternates: round 2 runs the entries in reverse
    per_round = entries * reps
    first, second = timed[:per_round:reps], timed[per_round:2 * per_round:reps]
    assert first == second[::-1]


def test_bench_no_cublas_and_cublas_only(gemm_gpu, tmp_path, capsys):
    js = tmp_path / "b.json"
    assert main(["bench", "--chapters", "4", "--sizes", "256", "--rounds", "1", "--reps", "1", "--warmup", "1",
                 "--no-cublas", "--json", str(js)]) == 0
    assert [r["name"] for r in json.loads(js.read_text())["results"]] == ["chapter 4"]
    assert main(["bench", "--cublas-only", "--sizes", "256", "--rounds", "1", "--reps", "1", "--warmup", "1",
                 "--json", str(js)]) == 0
    rep = json.loads(js.read_text())
    assert [r["name"] for r in rep["results"]] == ["cuBLAS (CuPy)"]
    assert "not a B200 result" in rep["notes"][-1]


def test_bench_without_cupy_says_so(monkeypatch, tmp_path, capsys):
    FakeGpu(executor=execute.numpy_gemm, cupy=False).install(monkeypatch)
    try:
        assert main(["bench", "--chapters", "2", "--sizes", "256", "--rounds", "1", "--reps", "1",
                     "--warmup", "1"]) == 0
    finally:
        FakeGpu.reset_caches()
    assert "cuBLAS baseline absent: CuPy is not installed" in capsys.readouterr().out


def test_bench_reports_a_wrong_kernel(fake_b200, capsys):
    """No executor: D stays zero, so the sampled check fails and bench exits 1 naming the chapter."""
    assert main(["bench", "--chapters", "4", "--sizes", "256", "--rounds", "1", "--reps", "1", "--warmup", "1",
                 "--no-cublas"]) == 1
    assert "failed the correctness check: ['chapter 4']" in capsys.readouterr().err


def test_bench_refuses_on_an_h200(monkeypatch, capsys):
    FakeGpu(H200).install(monkeypatch)
    try:
        assert main(["bench", "--chapters", "7", "--sizes", "2048"]) == 2
    finally:
        FakeGpu.reset_caches()
    assert "found a NVIDIA H200 (fake) (compute capability 9.0)" in capsys.readouterr().err


def test_captured_launch_keeps_its_memory_alive(gemm_gpu):
    """bench relaunches a captured launch many times after the entry returned: the device arrays and
    the tensor maps' buffers must still be alive (the fake refuses freed memory)."""
    a, b = random_operands(256, 256, 128)
    cap = bench.capture_launch(5, a, b)
    gc.collect()
    cap.launch()
    assert len(gemm_gpu.kernel_launches()) == 2
    del cap
    gc.collect()
    last = gemm_gpu.kernel_launches()[-1]
    with pytest.raises(FakeIllegalAddress):
        gemm_gpu.matrix(last.tensor_maps[0])


# -- verify and trace with --backend blackwell ----------------------------------------------------------

def test_verify_blackwell(gemm_gpu, capsys):
    assert main(["verify", "--chapter", "7", "--backend", "blackwell", "--m", "256", "--n", "256", "--k", "128"]) == 0
    assert "chapter 7 (" in capsys.readouterr().out


def test_verify_blackwell_fails_on_a_wrong_result(fake_b200, capsys):
    assert main(["verify", "--chapter", "7", "--backend", "blackwell"]) == 1
    assert "FAIL" in capsys.readouterr().out


def _first_barrier(regions):
    """The first 8-byte region of a SmemPlan (an mbarrier): (name, offset, size)."""
    return next(r for r in regions if r[2] == 8)


def _stamp_timeline(gpu, launch, *, capacity=1 << 18):
    """An executor for the timeline build: the fake GPU writes two stamps (a wait of warp 0 on the
    chapter's first barrier) into the timeline buffer, as the instrumented kernel would."""
    from gemm_kernels.instrument import PARITY_BIT, STAMP_DTYPE, WAIT_BEGIN, WAIT_END
    from gemm_kernels.ptx import probe

    execute.numpy_gemm(gpu, launch)
    size = probe.HEADER_BYTES + probe.STAMP_RECORD_BYTES * capacity
    bufs = [x for x in gpu.memory.allocations.values() if x.nbytes == size and x.live]
    if not bufs or launch.dispatcher is gpu.launches[0].dispatcher:
        return
    raw = bufs[-1].data
    bar_name, bar, _ = _first_barrier(gpu.regions)
    struct.pack_into("<II", raw, 0, 2, 0x400)
    recs = np.zeros(2, STAMP_DTYPE)
    recs["t"] = [1000, 3000]
    recs["code"] = [WAIT_BEGIN, WAIT_END]
    recs["arg"] = (0x400 + bar) | PARITY_BIT
    raw[probe.HEADER_BYTES:probe.HEADER_BYTES + recs.nbytes] = np.frombuffer(recs.tobytes(), np.uint8)


def test_trace_blackwell_draws_the_instrumented_build(monkeypatch, tmp_path, capsys):
    from gemm_kernels.kernels import v7_warp_specialized as v7

    gpu = FakeGpu(executor=_stamp_timeline).install(monkeypatch)
    gpu.regions = v7.make_plan(v7.DEFAULT_DEPTH)[0].regions
    try:
        out, js = tmp_path / "t.png", tmp_path / "t.json"
        rc = main(["trace", "--chapter", "7", "--backend", "blackwell", "--out", str(out), "--json", str(js)])
    finally:
        FakeGpu.reset_caches()
    text = capsys.readouterr().out
    assert rc == 0, text
    assert out.stat().st_size > 0
    plain, instrumented = gpu.kernel_launches()
    assert instrumented.dispatcher is not plain.dispatcher and instrumented.kernel == plain.kernel
    assert (instrumented.grid, instrumented.block, instrumented.cluster, instrumented.shared_bytes, instrumented.args) \
        == (plain.grid, plain.block, plain.cluster, plain.shared_bytes, plain.args)
    events = json.loads(js.read_text())["events"]
    assert [(e["op"], e["end"] - e["start"]) for e in events] == [("wait", 2000.0)]
    assert events[0]["barrier"] == _first_barrier(gpu.regions)[0]
    assert "measured" in json.loads(js.read_text())["source"]


# -- the hang guard's host side ---------------------------------------------------------------------------

def test_hang_guard_host_side(fake_b200):
    """A guarded launch whose kernel traps: the records the stuck warps wrote into mapped host memory
    become the emulator's Deadlock, barriers named by the chapter's SmemPlan."""
    from gemm_kernels.emu.errors import Deadlock
    from gemm_kernels.instrument import GUARD_DTYPE, GuardBuffer, launch_guarded
    from gemm_kernels.ptx import probe

    a, b = random_operands(256, 256, 128)
    cap = bench.capture_launch(7, a, b)
    buf = GuardBuffer(slots=4)
    bar_name, bar_off, _ = _first_barrier(cap.regions)

    def trap(gpu, launch):
        if launch.dispatcher is cap.kernel:
            return
        host = np.asarray(buf.host)
        struct.pack_into("<II", host, 0, 1, 0x400)
        rec = np.zeros(1, GUARD_DTYPE)
        rec["magic"], rec["cta_x"], rec["tid"], rec["bar"], rec["parity"] = probe.GUARD_MAGIC, 1, 64, 0x400 + bar_off, 1
        rec["elapsed_ns"] = buf.options.limit_ns + 5
        host[probe.HEADER_BYTES:probe.HEADER_BYTES + rec.nbytes] = np.frombuffer(rec.tobytes(), np.uint8)
        gpu.trapped = "the guard trapped"

    fake_b200.executor = trap
    with pytest.raises(Deadlock) as ei:
        launch_guarded(cap.kernel, cap.grid, cap.block, cap.args, regions=cap.regions,
                       shared_bytes=cap.shared_bytes, cluster=cap.cluster, buffer=buf)
    msg = str(ei.value)
    assert f"on {bar_name}" in msg and "warp 2 (thread 64" in msg and "CTA (1,0,0)" in msg
    assert "CUDA_ERROR_LAUNCH_FAILED" in str(ei.value.__cause__)
    guarded = fake_b200.kernel_launches()[-1]
    assert guarded.dispatcher is buf.kernel_for(cap.kernel) and guarded.args == cap.args


def test_hang_guard_passes_a_kernel_that_finishes(gemm_gpu):
    from gemm_kernels.instrument import launch_guarded

    a, b = random_operands(256, 256, 128)
    cap = bench.capture_launch(8, a, b)
    buf = launch_guarded(cap.kernel, cap.grid, cap.block, cap.args, regions=cap.regions,
                         shared_bytes=cap.shared_bytes, cluster=cap.cluster)
    guarded = gemm_gpu.kernel_launches()[-1]
    assert guarded.dispatcher is buf.kernel_for(cap.kernel) and guarded.args == cap.args, "the guarded build ran"
    assert buf.read().count(0) == len(buf.read())
