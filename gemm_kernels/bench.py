"""The benchmark protocol: TFLOP/s of each chapter's kernel beside cuBLAS, on a B200.

The protocol (``PROTOCOL`` states it in the JSON output too):

* inputs: A [M, K] and B [N, K], fp16, uniform in [-1, 1) (``check.random_operands``, seed 0);
  D = A @ B.T in fp16 with fp32 accumulation. Results depend on the input distribution (zeros run
  faster than random data on tensor cores), so it is stated and fixed;
* inputs are uploaded and tensor maps encoded ONCE (``capture_launch``); only the kernel launch is
  timed, between two CUDA events on the default stream;
* each (kernel, size) runs ``warmup`` times first (compilation, first-touch, clocks ramp up); its
  first result is checked against numpy on a sample of rows;
* before every timed launch, a buffer of twice the L2 size is written, so no run finds its operands
  in L2 left there by the previous one;
* ``rounds`` rounds of ``reps`` timed launches each; the order of the kernels alternates between
  rounds (forward, then reversed), so no kernel always runs right after the same neighbour or
  always first on a cold GPU; the figure reported is the median over all timed launches (with the
  25th/75th percentiles and the minimum);
* SM and memory clocks (and power, temperature) are read through NVML or ``nvidia-smi`` before and
  after; we do not lock clocks (that needs root and changes what is measured): read them.

``--backend emulator`` reports instead the emulator's *virtual-clock* estimate: the span of a traced
run at the chapter's small test shape and FLOPs / span. That is a MODEL (``emu.costmodel``), labelled
as such everywhere it appears, never a measurement.

cuBLAS is timed through CuPy (``cupy.matmul(A, B.T)``) when CuPy is installed (an optional extra:
``pip install cupy-cuda13x``); otherwise the output says it is absent.
"""
from __future__ import annotations

import datetime
import json
import shutil
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field

import numpy as np

MODEL_LABEL = "MODEL: emulator virtual clock (gemm_kernels.emu.costmodel), not a measurement"
PROTOCOL = {
    "inputs": "A [M,K], B [N,K] fp16, uniform in [-1, 1) (numpy default_rng, seed 0); D = A @ B.T fp16, fp32 accumulate",
    "timed": "kernel launch only (inputs uploaded and tensor maps encoded once), CUDA events on the default stream",
    "warmup": "warm-up launches per (kernel, size) before timing; first result checked against numpy on sampled rows",
    "l2": "a buffer of 2x the L2 size is written before every timed launch",
    "order": "kernel order alternates between rounds (forward, reversed)",
    "statistic": "median over rounds x reps timed launches (p25, p75, min also given)",
    "clocks": "read via NVML or nvidia-smi before and after; not locked",
    "flops": "2 M N K per GEMM",
}


@dataclass
class Result:
    name: str
    chapter: int | None
    m: int
    n: int
    k: int
    tflops: float
    median_ms: float = None
    p25_ms: float = None
    p75_ms: float = None
    min_ms: float = None
    samples: int = 0
    verified: bool | None = None
    check: str = ""
    kind: str = "measurement"  # or "model"
    note: str = ""


@dataclass
class Report:
    kind: str  # "measurement" or "model"
    label: str
    results: list = field(default_factory=list)
    protocol: dict = field(default_factory=dict)
    device: dict = field(default_factory=dict)
    clocks: dict = field(default_factory=dict)
    software: dict = field(default_factory=dict)
    cublas: str = ""
    date_utc: str = ""
    notes: list = field(default_factory=list)

    def to_json(self):
        d = asdict(self)
        d["model"] = self.kind == "model"
        return d


# -- shapes ---------------------------------------------------------------------------------------

def shapes_for(chapter, sizes):
    """The (M, N, K) a chapter runs in the benchmark: chapter 1 only 128 x 128 x 64; chapter 2 one
    tile, M = N = 128, K = each size; the others size^3 where the size is a multiple of their tile."""
    from .chapters import CHAPTERS

    ch = CHAPTERS[chapter]
    if chapter == 1:
        return [(128, 128, 64)]
    if chapter == 2:
        return [(128, 128, s) for s in sizes if s % ch.tile[2] == 0]
    tm, tn, tk = ch.tile
    return [(s, s, s) for s in sizes if s % tm == 0 and s % tn == 0 and s % tk == 0]


def parse_chapters(text):
    """'1-9', '3,5,7', '4-6,9' -> sorted list of ints."""
    out = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.update(range(int(lo), int(hi) + 1))
        else:
            out.add(int(part))
    return sorted(out)


# -- environment ----------------------------------------------------------------------------------

def _version(pkg):
    try:
        from importlib.metadata import version

        return version(pkg)
    except Exception:  # noqa: BLE001
        return None


def software():
    return {"python": sys.version.split()[0], "numpy": np.__version__,
            **{p: _version(p) for p in ("numba-cuda", "numba", "llvmlite", "cuda-core", "cuda-bindings", "cupy-cuda13x",
                                        "cupy-cuda12x", "cupy")}}


def read_clocks():
    """SM / memory clocks, power and temperature of GPU 0: NVML (nvidia-ml-py) if importable, else
    nvidia-smi; {'source': 'unavailable'} if neither works."""
    try:
        import pynvml as nv

        nv.nvmlInit()
        h = nv.nvmlDeviceGetHandleByIndex(0)
        out = {"source": "NVML",
               "sm_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
               "mem_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
               "max_sm_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
               "max_mem_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)}
        try:
            out["power_w"] = nv.nvmlDeviceGetPowerUsage(h) / 1000
            out["temperature_c"] = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
        except Exception:  # noqa: BLE001
            pass
        return out
    except Exception:  # noqa: BLE001
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        q = "name,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu,driver_version"
        try:
            res = subprocess.run([smi, f"--query-gpu={q}", "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, timeout=20)
            vals = [v.strip() for v in res.stdout.strip().splitlines()[0].split(",")]
            keys = ["name", "sm_mhz", "mem_mhz", "max_sm_mhz", "max_mem_mhz", "power_w", "temperature_c", "driver"]
            return {"source": "nvidia-smi", **dict(zip(keys, vals))}
        except Exception as e:  # noqa: BLE001
            return {"source": f"nvidia-smi failed: {e}"}
    return {"source": "unavailable (no NVML, no nvidia-smi)"}


def cupy_status():
    """(cupy module or None, text for the report)."""
    try:
        import cupy

        return cupy, f"cuBLAS through CuPy {cupy.__version__} (cupy.matmul(A, B.T), fp16 in/out)"
    except Exception as e:  # noqa: BLE001
        return None, (f"cuBLAS baseline absent: CuPy is not installed ({type(e).__name__}); it is an optional extra: "
                      f"pip install cupy-cuda13x")


# -- the GPU side ---------------------------------------------------------------------------------

@dataclass
class Captured:
    """One chapter launch, prepared: what ``runtime.launch.launch`` needs, and what keeps it alive."""

    kernel: object
    grid: tuple
    block: object
    args: tuple
    shared_bytes: int
    cluster: tuple
    keep: list
    result: np.ndarray
    regions: list = field(default_factory=list)

    def launch(self, stream=None):
        from .runtime.launch import launch

        launch(self.kernel, self.grid, self.block, self.args, cluster=self.cluster, shared_bytes=self.shared_bytes,
               stream=stream)


def capture_launch(chapter, a, b, **config):
    """Run chapter ``chapter``'s host entry once on the GPU (backend='blackwell') and capture its
    launch: the kernel, grid, block, device arguments (tensor-map addresses included) and the
    objects that keep them alive, so that the launch can be repeated without re-uploading.

    Works without editing the kernel modules: the entries look up ``host.run_on_gpu`` and
    ``tensor_maps.gpu_maps`` at call time, and both are wrapped here for the duration of the call."""
    from .chapters import CHAPTERS
    from .kernels import host, tensor_maps

    seen, keep = {}, []
    real_run, real_maps = host.run_on_gpu, tensor_maps.gpu_maps

    def run_on_gpu(kernel, grid, block, args, *, plan, cluster=(1, 1, 1)):
        seen.update(kernel=kernel, grid=grid, block=block, args=tuple(args), shared_bytes=plan.size, cluster=cluster,
                    regions=list(plan.regions))
        keep.extend(a for a in args if hasattr(a, "__cuda_array_interface__"))
        return real_run(kernel, grid, block, args, plan=plan, cluster=cluster)

    def gpu_maps(specs):
        addrs, kept = real_maps(specs)
        keep.append(kept)
        keep.extend(spec[1] for spec in specs)  # (name, array, rows, cols[, swizzle])
        return addrs, kept

    host.run_on_gpu, tensor_maps.gpu_maps = run_on_gpu, gpu_maps
    try:
        d = CHAPTERS[chapter].entry(a, b, backend="blackwell", **config)
    finally:
        host.run_on_gpu, tensor_maps.gpu_maps = real_run, real_maps
    if "kernel" not in seen:
        raise RuntimeError(f"chapter {chapter}'s entry did not launch through host.run_on_gpu")
    return Captured(seen["kernel"], seen["grid"], seen["block"], seen["args"], seen["shared_bytes"],
                    seen["cluster"], keep, np.asarray(d), seen["regions"])


def chapter_gpu_trace(chapter, m, n, k, *, capacity=1 << 18, **config):
    """The on-chip timeline of one chapter launch on the GPU: capture the launch, relaunch a
    timeline-instrumented copy of the kernel with the same arguments, decode the stamps. Returns
    (Trace, sampled-check ok, check text)."""
    from numba import cuda

    from .check import random_operands
    from .instrument import TimelineBuffer, decode_timeline, instrument
    from .runtime.launch import launch

    a, b = random_operands(m, n, k, seed=0)
    cap = capture_launch(chapter, a, b, **config)
    buf = TimelineBuffer(capacity)
    k_tl = instrument(cap.kernel, timeline=buf.options)
    launch(k_tl, cap.grid, cap.block, cap.args, cluster=cap.cluster, shared_bytes=cap.shared_bytes)
    cuda.synchronize()
    grid = cap.grid if isinstance(cap.grid, tuple) else (cap.grid,)
    trace = decode_timeline(buf.read(), regions=cap.regions, grid_x=grid[0],
                            source="B200 %globaltimer (measured)")
    ok, text = sampled_check(cap.result, a, b)
    return trace, ok, text


def sampled_check(d, a, b, rows=64, seed=1):
    """Compare ``rows`` random rows of D with numpy (check.compare on the sampled rows)."""
    from .check import compare

    idx = np.sort(np.random.default_rng(seed).choice(a.shape[0], size=min(rows, a.shape[0]), replace=False))
    res = compare(np.asarray(d)[idx], a[idx], b)
    return res.ok, f"{len(idx)} sampled rows: " + res.report()


class _Flusher:
    """Writes a device buffer of 2x the L2 size (read from the device) before each timed launch."""

    def __init__(self):
        from numba import cuda

        from .runtime import ensure_numpy_compat

        ensure_numpy_compat()
        l2 = _l2_bytes()
        self.nbytes = 2 * l2
        self.buf = cuda.device_array(self.nbytes // 4, np.uint32)
        self.value = 0

        @cuda.jit
        def fill(buf, v):
            i = cuda.grid(1)
            stride = cuda.gridsize(1)
            while i < buf.size:
                buf[i] = v
                i += stride

        self.kernel = fill

    def __call__(self):
        self.value += 1
        self.kernel[1024, 256](self.buf, np.uint32(self.value))


def _l2_bytes():
    try:
        from cuda.bindings import driver as drv

        err, dev = drv.cuDeviceGet(0)
        err, v = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)
        if int(err) == 0 and v > 0:
            return int(v)
    except Exception:  # noqa: BLE001
        pass
    return 128 * 2**20


def _timed(launch, flush, reps):
    from numba import cuda

    out = []
    for _ in range(reps):
        flush()
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        launch()
        e1.record()
        e1.synchronize()
        out.append(cuda.event_elapsed_time(e0, e1))
    return out


def _summary(name, chapter, shape, times, **kw):
    m, n, k = shape
    med = statistics.median(times)
    q = np.percentile(times, [25, 75])
    return Result(name, chapter, m, n, k, tflops=2 * m * n * k / (med * 1e-3) / 1e12, median_ms=med,
                  p25_ms=float(q[0]), p75_ms=float(q[1]), min_ms=min(times), samples=len(times), **kw)


def run_gpu(chapters, sizes, *, warmup=3, rounds=5, reps=4, cublas=True, chapters_on=True, log=print,
            pipe_depths=(None,)):
    """The measured protocol. ``chapters_on=False`` times cuBLAS alone (to check the protocol on a
    GPU that is not a B200). Returns a Report."""
    from numba import cuda

    from .chapters import CHAPTERS
    from .check import random_operands
    from .runtime.device import gpu_info

    info = gpu_info()
    cp, cub_text = cupy_status()
    rep = Report("measurement", f"measured on {info.name if info else '?'}", protocol=dict(PROTOCOL),
                 software=software(), cublas=cub_text,
                 date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    if info is not None:
        rep.device = {"name": info.name, "compute_capability": list(info.compute_capability), "sm_count": info.sm_count,
                      "l2_bytes": _l2_bytes(), "driver_api": info.driver_version}
    rep.clocks["before"] = read_clocks()
    flush = _Flusher()
    rep.protocol.update(warmup_runs=warmup, rounds=rounds, reps_per_round=reps, l2_flush_bytes=flush.nbytes)
    if cp is not None:
        try:
            from cupy._core import _routines_linalg as rl

            rl.set_compute_type(rl.COMPUTE_TYPE_FP32)
            rep.notes.append("CuPy compute type set to COMPUTE_TYPE_FP32 (fp32 accumulation, as the chapters)")
        except Exception as e:  # noqa: BLE001
            rep.notes.append(f"CuPy compute type left at its default ({type(e).__name__})")

    entries = []  # (name, chapter, shape, launch)
    operands = {}
    all_shapes = sorted({s for c in (chapters if chapters_on else []) for s in shapes_for(c, sizes)}
                        | {(s, s, s) for s in sizes})
    for shape in all_shapes:
        operands[shape] = random_operands(*shape, seed=0)
    if chapters_on:
        for c in chapters:
            takes_depth = "pipe_depth" in CHAPTERS[c].config
            for depth in (pipe_depths if takes_depth else (None,)):
                cfg = {} if depth is None else {"pipe_depth": depth}
                label = f"chapter {c}" + ("" if depth is None else f" (depth {depth})")
                for shape in shapes_for(c, sizes):
                    a, b = operands[shape]
                    log(f"preparing {label} at {shape} ...")
                    cap = capture_launch(c, a, b, **cfg)
                    ok, text = sampled_check(cap.result, a, b)
                    entries.append((label, c, shape, cap.launch, ok, text))
    if cp is not None and cublas:
        for s in sizes:
            a, b = operands[(s, s, s)]
            ca, cb = cp.asarray(a), cp.asarray(b)
            cd = cp.empty((s, s), dtype=cp.float16)

            def go(ca=ca, cb=cb, cd=cd):
                cp.matmul(ca, cb.T, out=cd)

            go()
            cp.cuda.Device().synchronize()
            ok, text = sampled_check(cp.asnumpy(cd), a, b)
            entries.append(("cuBLAS (CuPy)", None, (s, s, s), go, ok, text))
    for name, c, shape, go, _, _ in entries:
        for _ in range(warmup):
            go()
    cuda.synchronize()
    times = {i: [] for i in range(len(entries))}
    for r in range(rounds):
        order = list(range(len(entries)))
        if r % 2:
            order.reverse()
        for i in order:
            times[i] += _timed(entries[i][3], flush, reps)
        log(f"round {r + 1}/{rounds} done")
    for i, (name, c, shape, _, ok, text) in enumerate(entries):
        rep.results.append(_summary(name, c, shape, times[i], verified=ok, check=text))
    rep.clocks["after"] = read_clocks()
    return rep


# -- the emulator's model -------------------------------------------------------------------------

def run_model(chapters, *, log=print):
    """Each chapter once on the emulator with trace=True at its test shape; TFLOP/s = FLOPs / span of
    the trace (virtual clock). A MODEL, labelled so."""
    from .chapters import CHAPTERS
    from .check import compare, random_operands

    rep = Report("model", MODEL_LABEL, protocol={"model": "one traced emulator run per chapter at its test shape "
                                                          "(policy lazy); TFLOP/s = 2MNK / (last event end - first "
                                                          "event start) of the trace",
                                                 "inputs": PROTOCOL["inputs"]},
                 software=software(), cublas="not applicable to the model",
                 date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    from .emu import costmodel

    rep.notes.append(f"cost model: {costmodel.CLOCK_GHZ} GHz, {costmodel.MMA_FLOP_PER_CYCLE} FLOP/cycle/SM, TMA "
                     f"{costmodel.TMA_LATENCY_CYCLES} cycles + {costmodel.TMA_BYTES_PER_CYCLE} B/cycle; every CTA on "
                     f"its own SM, all at once; persistent chapters use the emulator's small grids")
    for c in chapters:
        ch = CHAPTERS[c]
        m, n, k = ch.test_shape
        a, b = random_operands(m, n, k, seed=0)
        log(f"chapter {c}: traced emulator run at {m}x{n}x{k} ...")
        launched = ch.entry(a, b, backend="emulator", trace=True)
        t0, t1 = launched.launch.trace.span()
        span = t1 - t0
        res = compare(launched.d, a, b)
        rep.results.append(Result(f"chapter {c}", c, m, n, k, tflops=2 * m * n * k / span / 1e3 if span else 0.0,
                                  median_ms=span * 1e-6, samples=1, verified=res.ok, check=res.report(), kind="model",
                                  note=f"virtual span {span:.0f} ns (model)"))
    return rep


# -- output ---------------------------------------------------------------------------------------

def table(rep: Report) -> str:
    model = rep.kind == "model"
    head = (f"{MODEL_LABEL}\n" if model else f"{rep.label}\n")
    tf = "model TFLOP/s" if model else "TFLOP/s"
    tm = "virtual ns" if model else "median ms"
    cols = f"{'kernel':<16} {'M':>6} {'N':>6} {'K':>6} {tm:>12} {tf:>14}" + ("" if model else f" {'p25-p75 ms':>19}") \
        + "  check"
    lines = [head + cols, "-" * len(cols)]
    for r in rep.results:
        spread = "" if model else f" {r.p25_ms:>9.4f}-{r.p75_ms:<9.4f}"
        chk = {True: "ok", False: "FAIL", None: "-"}[r.verified]
        t = f"{r.median_ms * 1e6:>12.0f}" if model else f"{r.median_ms:>12.4f}"
        lines.append(f"{r.name:<16} {r.m:>6} {r.n:>6} {r.k:>6} {t} {r.tflops:>14.2f}{spread}  {chk}")
    if rep.cublas:
        lines.append(rep.cublas)
    for c in ("before", "after"):
        if c in rep.clocks:
            lines.append(f"clocks {c}: {rep.clocks[c]}")
    return "\n".join(lines)


def plot(rep: Report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(rep)
    fig.savefig(path)
    plt.close(fig)
    return path


def figure(rep: Report):
    """The bar chart of a report, page-wide with its text at ``timeline.MIN_FONT`` as displayed."""
    import matplotlib.pyplot as plt

    from .timeline import DPI, MIN_FONT, WIDTH_IN

    model = rep.kind == "model"
    names = []
    for r in rep.results:
        if r.name not in names:
            names.append(r.name)
    shapes = sorted({(r.m, r.n, r.k) for r in rep.results}, key=lambda s: s[0] * s[1] * s[2])
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 4.2), dpi=DPI, layout="constrained")
    width = 0.8 / max(1, len(shapes))
    for j, shape in enumerate(shapes):
        xs, ys = [], []
        for i, nm in enumerate(names):
            for r in rep.results:
                if r.name == nm and (r.m, r.n, r.k) == shape:
                    xs.append(i + (j - (len(shapes) - 1) / 2) * width)
                    ys.append(r.tflops)
        ax.bar(xs, ys, width=width, label="x".join(map(str, shape)))
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=MIN_FONT)
    ax.tick_params(labelsize=MIN_FONT)
    ax.set_ylabel("model TFLOP/s (virtual clock)" if model else "TFLOP/s (median)", fontsize=MIN_FONT)
    title = (MODEL_LABEL if model else f"{rep.label}: {PROTOCOL['statistic']}, L2 flushed, fp16 uniform[-1,1)")
    ax.set_title(title, fontsize=MIN_FONT, loc="left", wrap=True)
    if len(shapes) > 1 or not model:
        ax.legend(fontsize=MIN_FONT, title="M x N x K", title_fontsize=MIN_FONT)
    ax.grid(axis="y", color="#dddddd", lw=0.5)
    ax.set_axisbelow(True)
    return fig


def write_json(rep: Report, path):
    with open(path, "w") as f:
        json.dump(rep.to_json(), f, indent=1)
    return path
