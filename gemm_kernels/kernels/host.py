"""What every chapter's host entry shares: input validation, backend choice, launching on the
emulator or on a B200, and the numpy reference."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

BACKENDS = ("blackwell", "emulator")
_said = set()


@dataclass
class Launched:
    """What a host entry ran: the result and, on the emulator, the launch (trace, policy)."""

    d: np.ndarray
    backend: str
    launch: object = None
    config: dict = field(default_factory=dict)


def check_operands(a, b, *, chapter, tile_m, tile_n, tile_k, exact=None):
    """Validate A [M, K] and B [N, K] before anything launches; return (M, N, K)."""
    for name, x in (("A", a), ("B", b)):
        if not isinstance(x, np.ndarray) and not hasattr(x, "__cuda_array_interface__"):
            raise TypeError(f"{name} must be a numpy array (or a CUDA device array), not {type(x).__name__}")
        if x.dtype != np.float16:
            raise TypeError(f"{name} has dtype {x.dtype}; chapter {chapter} computes with fp16 inputs: "
                            f"convert with {name}.astype(np.float16)")
        if x.ndim != 2:
            raise ValueError(f"{name} must be 2-D ([rows, K], K-major), not {x.ndim}-D")
        if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous (row-major, K-major); use np.ascontiguousarray({name})")
    m, k = a.shape
    n, kb = b.shape
    if k != kb:
        raise ValueError(f"A is [M={m}, K={k}] but B is [N={n}, K={kb}]: both must have the same K "
                         f"(B is stored [N, K]; D = A @ B.T)")
    if exact is not None:
        em, en, ek = exact
        bad = [(nm, v, e) for nm, v, e in (("M", m, em), ("N", n, en), ("K", k, ek)) if e is not None and v != e]
        if bad:
            what = ", ".join(f"{nm}={v}" for nm, v, _ in bad)
            need = ", ".join(f"{nm}={e}" for nm, _, e in bad)
            raise ValueError(f"chapter {chapter} computes exactly one tile: got {what}, needs {need}")
    for nm, v, t in (("M", m, tile_m), ("N", n, tile_n), ("K", k, tile_k)):
        if t and (v <= 0 or v % t):
            raise ValueError(f"chapter {chapter} needs {nm} to be a positive multiple of {t} (its tile); got {nm}={v}")
    return m, n, k


def choose_backend(backend, chapter):
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be 'blackwell', 'emulator' or None, not {backend!r}")
    from ..runtime.device import gpu_info, require_blackwell

    if backend == "blackwell":
        require_blackwell()
        return "blackwell"
    if backend == "emulator":
        return "emulator"
    info = gpu_info()
    if info is not None and tuple(info.compute_capability)[:1] == (10,):
        return "blackwell"
    if chapter not in _said:
        _said.add(chapter)
        found = "no CUDA GPU" if info is None else f"a {info.name} (not a B200)"
        print(f"gemm_v{chapter}: found {found}; running on the emulator", file=sys.stderr)
    return "emulator"


from ..check import reference  # noqa: E402,F401  (kept importable from here)


def run_on_emulator(kernel, grid, block, args, *, plan, cluster=(1, 1, 1), policy="lazy", seed=0,
                    trace=False, tensor_maps=None, resident=None):
    from .. import emu

    return emu.run(kernel, grid, block, args, cluster=cluster, shared_bytes=plan.size, policy=policy, seed=seed,
                   trace=trace, names=plan.regions, tensor_maps=tensor_maps, resident=resident)


def run_on_gpu(kernel, grid, block, args, *, plan, cluster=(1, 1, 1)):
    from ..runtime.launch import launch

    launch(kernel, grid, block, args, cluster=cluster, shared_bytes=plan.size)


def check_pipeline_config(pipe_depth=1, group=1):
    """The knobs of the pipelined chapters (5-9), checked before anything is built."""
    for name, v in (("pipe_depth", pipe_depth), ("group", group)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def persistent_size(backend, requested, emulator_default, ctas_per_unit=1):
    """How many persistent CTAs (or clusters of ``ctas_per_unit`` CTAs) to launch: as requested,
    else a small number on the emulator (so each takes several tiles), else one per SM (pair of SMs).
    For clusters, ``tma_launch`` then lowers the grid to what the driver says can be
    resident at once (``runtime.launch.max_active_clusters``)."""
    if requested is not None:
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            raise ValueError(f"the number of persistent CTAs/clusters must be a positive int, got {requested!r}")
        return requested
    if backend == "emulator":
        return emulator_default
    from ..runtime.device import gpu_info

    return gpu_info().sm_count // ctas_per_unit


# -- shared by the TMA chapters (4-9) -----------------------------------------------------------
#: the persistent chapters' tile-group size and, on the emulator, their CTA count (few, so that
#: each CTA takes several tiles)
GROUP = 8
EMULATOR_CTAS = 3


def tma_launch(kernel, grid, a, b, m, n, k, backend, policy, seed, trace, *, plan, threads, boxes,
               cluster=(1, 1, 1), extra=(), k_tiles=None, d_pitch=None, out=None, resident=None, extra_maps=(),
               d_dtype=np.float16):
    """Shared by steps 4-10: build the three tensor maps, launch, return D (and the launch).
    Step 10's extras: ``k_tiles`` (default K / 64), ``d_pitch`` (D's row pitch in elements, default
    N: D is then the M x N view of an M x d_pitch array), ``out`` (the M x N array to write) and
    ``resident`` (cluster launch control: the grid has a cluster per tile, of which this many run at
    once on the emulator; on a B200 the whole grid is launched and the chip decides).
    Step 11's ``extra_maps``: more tensor maps, (name, array, box_rows, box_cols, swizzle) each or
    None (the kernel gets address 0 and must not use it), passed after D's and before ``k_tiles``;
    ``d_dtype``, D's element type (2 bytes: step 11 stores BF16 D as uint16 and views it)."""
    import numpy as np

    from .tensor_maps import FirstColumns, emulator_maps, gpu_maps

    (am, ak), (bm, bk), (dm, dn, *dswz) = boxes  # the D box may name its swizzle (default 128B)
    k_tiles = k // 64 if k_tiles is None else k_tiles
    pitch = n if d_pitch is None else d_pitch
    if backend == "emulator":
        # D is ours, as on the GPU below: a store of a ragged edge writes the row's last 16-byte chunk
        # whole (recorded on an H200), so it must never be the caller's view of a wider array
        d = np.zeros((m, pitch), dtype=d_dtype)[:, :n]
        addrs, models = emulator_maps([("A", a, am, ak), ("B", b, bm, bk), ("D", d, dm, dn) + tuple(dswz)]
                                      + [spec for spec in extra_maps if spec is not None])
        addrs = _with_absent(addrs, extra_maps)
        clc = {} if resident is None else {"resident": resident}
        launch = run_on_emulator(kernel, grid, threads, tuple(addrs) + (k_tiles,) + tuple(extra), plan=plan,
                                 cluster=cluster, policy=policy, seed=seed, trace=trace, tensor_maps=models, **clc)
        if out is not None:
            out[...] = d
            d = out
        return Launched(d, backend, launch) if trace else d
    from numba import cuda

    da, db = cuda.to_device(a), cuda.to_device(b)
    d_full = cuda.to_device(np.zeros((m, pitch), dtype=d_dtype))
    # the map's rows are N long; a ragged edge's store also writes the padding up to the next 16 bytes
    dd = d_full if pitch == n else FirstColumns(d_full, n)
    extra_dev = [None if spec is None else (spec[0], cuda.to_device(spec[1])) + tuple(spec[2:]) for spec in extra_maps]
    addrs, keep = gpu_maps([("A", da, am, ak), ("B", db, bm, bk), ("D", dd, dm, dn) + tuple(dswz)]
                           + [spec for spec in extra_dev if spec is not None])
    addrs = _with_absent(addrs, extra_maps)
    args = tuple(np.uint64(x) for x in addrs) + (np.int32(k_tiles),) + tuple(extra)
    if cluster != (1, 1, 1) and resident is None:
        # a persistent grid of clusters: no more clusters than can be resident at once (not every
        # pair of SMs need be able to host one), or the extra ones would run as a second wave
        from ..runtime.launch import max_active_clusters

        fit = max_active_clusters(kernel, threads, args, cluster=cluster, shared_bytes=plan.size)
        grid = (min(grid[0], cluster[0] * max(fit, 1)),) + tuple(grid[1:])
    run_on_gpu(kernel, grid, threads, args, plan=plan, cluster=cluster)
    cuda.synchronize()
    del keep, extra_dev
    result = d_full.copy_to_host()[:, :n]
    if out is None:
        return result
    out[...] = result
    return out


def _with_absent(addrs, extra_maps):
    """The three maps' addresses, then one per entry of ``extra_maps`` (0 for None)."""
    it = iter(addrs[3:])
    return list(addrs[:3]) + [0 if spec is None else next(it) for spec in extra_maps]
