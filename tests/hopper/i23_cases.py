"""H200 ground truth for step 10's edge tiles (issue 23): TMA out-of-bounds behaviour as gemm_v10
uses it, a Hopper-shared behaviour.

* loads of a 128 x 64 box (128B swizzle, step 10's A/B box) from a 5 x 72 matrix: rows past M,
  the k-tail past K (8 of 64 columns inside) and a box wholly below the matrix; each must be filled
  with zeros and complete its whole box's bytes on the barrier;
* stores of a 128 x 32 box (64B swizzle, step 10's D subtile) into a 5 x 13 matrix whose rows lie
  16 elements apart (D's padded pitch): clipped at row 5 and column 13, the padding columns and
  everything past the matrix untouched; a box wholly right of the matrix and one wholly below it
  write nothing.

Same scheme as micro_kernels.py and i13_cases.py (whose launcher and helpers this reuses): each
kernel writes what it observes; ``python tests/hopper/i23_cases.py --out tests/data/h200_ground_truth_i23.json``
records the GPU's outputs (recorded on an H200 on 2026-12-01), and tests/test_ground_truth_i23.py
replays the emulator against them byte for byte. The first run found that a store writes the last
16-byte chunk of each row whole (columns 13-15 of a 13-column map); ragged_loads and ragged_stores
were added to pin that down: loads fill zeros from column N exactly, stores write to the end of the
16-byte chunk that holds column N - 1."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback

import numpy as np
from numba import cuda, uint8, uint16, uint32

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gemm_kernels import ptx  # noqa: E402
from tests.hopper.micro_kernels import Case, _launch, bounded_wait, encode_outputs, tma_matrix  # noqa: E402

# -- 1. loads past M, past K, and wholly below ----------------------------------------------------
LD_BOX = (128, 64)  # rows, cols: step 10's A and B box
LD_BOX_BYTES = LD_BOX[0] * LD_BOX[1] * 2
LD_SHAPE = (5, 72)  # M rows, K columns: K = 64 + 8 (a k-tail of 8 columns)
LD_COORDS = ((0, 0), (64, 0), (0, 128))  # (col, row): rows past M; the k-tail; wholly below
LD_BAR = len(LD_COORDS) * LD_BOX_BYTES
LD_SMEM = LD_BAR + 64


def loads_kernel(coords, box_bytes):
    """A kernel that fills shared memory with 0xA5, then has thread 0 announce len(coords) whole boxes on
    one barrier and load box j at coords[j] (col, row); out: every byte of the boxes; status[0]: the
    barrier's phase completed."""
    total = len(coords) * box_bytes

    @cuda.jit
    def k_loads(tmap, out, status):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        bar = base + uint32(total)
        for i in range(tid, total, 128):
            smem[i] = 0xA5
        ptx.fence_proxy_async()
        if tid == 0:
            ptx.fence_proxy_tensormap_acquire(tmap)
            ptx.mbarrier_init(bar, 1)
            ptx.fence_mbarrier_init()
        cuda.syncthreads()
        if tid == 0:
            ptx.mbarrier_arrive_expect_tx(bar, total)  # whole boxes, the zero-filled bytes included
            for j in range(len(coords)):
                c0, c1 = coords[j]
                ptx.tma_load_2d(base + uint32(j * box_bytes), tmap, uint32(c0), uint32(c1), bar)
            status[0] = bounded_wait(bar, 0)
        cuda.syncthreads()
        for i in range(tid, total, 128):
            out[i] = smem[i]

    return k_loads


k_edge_loads = loads_kernel(LD_COORDS, LD_BOX_BYTES)


def _case_edge_loads(backend, policy, seed):
    mat = tma_matrix(np.uint16, *LD_SHAPE)
    out = np.zeros(LD_BAR, np.uint8)
    status = np.zeros(2, np.uint32)
    _launch(backend, k_edge_loads, 1, 128, ("tmap0", out, status), smem=LD_SMEM,
            maps=[(mat, LD_BOX, "128B")], policy=policy, seed=seed)
    return {"smem": out, "status": status}


# -- 2. stores clipped at M and at an N inside a padded pitch ----------------------------------------
ST_BOX = (128, 32)  # step 10's D subtile
ST_BOX_BYTES = ST_BOX[0] * ST_BOX[1] * 2
ST_SHAPE = (5, 13)  # M, N: N not a multiple of 8
ST_PITCH = 16  # elements: N rounded up to 8 (32-byte rows)
ST_COORDS = ((0, 0), (32, 0), (0, 128))  # (col, row): clipped at M and N; wholly right; wholly below
ST_SMEM = len(ST_COORDS) * ST_BOX_BYTES
MARK = 0x7777  # what D's backing array holds before the stores


@cuda.jit
def k_edge_stores(tmap, status):
    """Three staging boxes filled with distinct values (box j, byte offset o: word j * 65536 + o / 2,
    as uint16 pairs), then thread 0 stores box j at ST_COORDS[j] (one bulk group) and waits for the
    writes; status[0] = 1 when done. The caller reads D's whole backing array."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    half = cuda.shared.array(0, uint16, alignment=1024)
    tid = cuda.threadIdx.x
    base = ptx.shared_addr(smem)
    for i in range(tid, ST_SMEM // 2, 128):
        half[i] = (i // (ST_BOX_BYTES // 2)) * 0x1000 + (i % (ST_BOX_BYTES // 2)) % 0x1000 + 1
    ptx.fence_proxy_async()
    cuda.syncthreads()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap)
        for j in range(len(ST_COORDS)):
            c0, c1 = ST_COORDS[j]
            ptx.tma_store_2d(tmap, uint32(c0), uint32(c1), base + uint32(j * ST_BOX_BYTES))
        ptx.bulk_commit_group()
        ptx.bulk_wait_group_read0()
        status[0] = 1


def _case_edge_stores(backend, policy, seed):
    full = np.full((ST_SHAPE[0], ST_PITCH), MARK, np.uint16)
    d = full[:, :ST_SHAPE[1]]
    status = np.zeros(2, np.uint32)
    _launch(backend, k_edge_stores, 1, 128, ("tmap0", status), smem=ST_SMEM, maps=[(d, ST_BOX, "64B")],
            policy=policy, seed=seed)
    return {"global": full, "status": status}


# -- 3. where exactly the edge falls when N is not a multiple of 8 (16-byte granularity?) ------------
# The first H200 run of edge_stores wrote the padding columns 13-15 of a 13-column D (the row's last
# 16-byte chunk), so these pin the granularity: loads from and stores to a view of a 32-column
# backing array whose padding holds known values, at N = 13 (26 B, chunk edge at 32 B) and N = 17
# (34 B: 16-byte chunks end at 48 B, 32-byte ones at 64 B, the pitch at 64 B).
RG_BOX = (128, 32)  # 64 B rows, 64B swizzle
RG_BOX_BYTES = RG_BOX[0] * RG_BOX[1] * 2
RG_PITCH = 32
RG_ROWS = 5
RG_LD_COORDS = ((0, 0), (16, 0))  # N = 13: the ragged box, and one that starts past N inside the pitch
RG_ST_COORDS = ((0, 0), (16, 0))  # N = 17: the ragged box (first map), and one starting at column 16
RG_LD_BAR = len(RG_LD_COORDS) * RG_BOX_BYTES


k_ragged_loads = loads_kernel(RG_LD_COORDS, RG_BOX_BYTES)


def _ragged_backing():
    return tma_matrix(np.uint16, RG_ROWS, RG_PITCH)  # every element distinct, the padding too


def _case_ragged_loads(backend, policy, seed):
    full = _ragged_backing()
    out = np.zeros(RG_LD_BAR, np.uint8)
    status = np.zeros(2, np.uint32)
    _launch(backend, k_ragged_loads, 1, 128, ("tmap0", out, status), smem=RG_LD_BAR + 64,
            maps=[(full[:, :13], RG_BOX, "64B")], policy=policy, seed=seed)
    return {"smem": out, "status": status}


@cuda.jit
def k_ragged_stores(tmap_a, tmap_b, status):
    """Two staging boxes (values as in k_edge_stores); box 0 -> tmap_a at (0, 0), box 1 -> tmap_b at
    (16, 0); one bulk group, waited for."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    half = cuda.shared.array(0, uint16, alignment=1024)
    tid = cuda.threadIdx.x
    base = ptx.shared_addr(smem)
    for i in range(tid, 2 * RG_BOX_BYTES // 2, 128):
        half[i] = (i // (RG_BOX_BYTES // 2)) * 0x1000 + (i % (RG_BOX_BYTES // 2)) % 0x1000 + 1
    ptx.fence_proxy_async()
    cuda.syncthreads()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap_a)
        ptx.fence_proxy_tensormap_acquire(tmap_b)
        ptx.tma_store_2d(tmap_a, uint32(0), uint32(0), base)
        ptx.tma_store_2d(tmap_b, uint32(16), uint32(0), base + uint32(RG_BOX_BYTES))
        ptx.bulk_commit_group()
        ptx.bulk_wait_group_read0()
        status[0] = 1


def _case_ragged_stores(backend, policy, seed):
    fa = np.full((RG_ROWS, RG_PITCH), MARK, np.uint16)
    fb = np.full((RG_ROWS, RG_PITCH), MARK, np.uint16)
    status = np.zeros(2, np.uint32)
    _launch(backend, k_ragged_stores, 1, 128, ("tmap0", "tmap1", status), smem=2 * RG_BOX_BYTES,
            maps=[(fa[:, :17], RG_BOX, "64B"), (fb[:, :17], RG_BOX, "64B")], policy=policy, seed=seed)
    return {"global_a": fa, "global_b": fb, "status": status}


# -- 4. the same edge rule in the other swizzle modes and for 4-byte elements -----------------------
# name: dtype, N (the map's columns), backing columns, box (rows, cols), swizzle
MODES = (("none_u16", np.uint16, 21, 32, (8, 32), "none"),   # 42 B: the chunk ends at 48 B (column 23)
         ("sw128_u16", np.uint16, 41, 64, (8, 64), "128B"),  # 82 B: ends at 96 B (column 47)
         ("sw32_u32", np.uint32, 5, 16, (8, 8), "32B"))      # 20 B: ends at 32 B (column 7)
MODE_ROWS = 3
MODE_BOX_BYTES = tuple(r * c * np.dtype(t).itemsize for _, t, _, _, (r, c), _ in MODES)


@cuda.jit
def k_mode_stores(tmap_a, tmap_b, tmap_c, status):
    """Staging bytes i hold (i + 1) & 0xFF; box j (1024-aligned) -> map j at (0, 0), one bulk group."""
    smem = cuda.shared.array(0, uint8, alignment=1024)
    tid = cuda.threadIdx.x
    base = ptx.shared_addr(smem)
    for i in range(tid, 3 * 1024, 128):
        smem[i] = (i + 1) & 0xFF
    ptx.fence_proxy_async()
    cuda.syncthreads()
    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap_a)
        ptx.fence_proxy_tensormap_acquire(tmap_b)
        ptx.fence_proxy_tensormap_acquire(tmap_c)
        ptx.tma_store_2d(tmap_a, uint32(0), uint32(0), base)
        ptx.tma_store_2d(tmap_b, uint32(0), uint32(0), base + uint32(1024))
        ptx.tma_store_2d(tmap_c, uint32(0), uint32(0), base + uint32(2048))
        ptx.bulk_commit_group()
        ptx.bulk_wait_group_read0()
        status[0] = 1


def _case_mode_stores(backend, policy, seed):
    assert max(MODE_BOX_BYTES) <= 1024
    fulls = {name: np.full((MODE_ROWS, cols), 0x77, t) for name, t, _, cols, _, _ in MODES}
    maps = [(fulls[name][:, :n], box, swz) for name, _, n, _, box, swz in MODES]
    status = np.zeros(2, np.uint32)
    _launch(backend, k_mode_stores, 1, 128, ("tmap0", "tmap1", "tmap2", status), smem=3 * 1024, maps=maps,
            policy=policy, seed=seed)
    return {**fulls, "status": status}


CASES = [
    Case("edge_loads", "TMA 2D loads of a 128 x 64 box (128B swizzle) from a 5 x 72 uint16 matrix at (0, 0) (rows "
         "past M), (64, 0) (8 of 64 columns inside: the k-tail) and (0, 128) (wholly below); one barrier announced "
         "with three whole boxes", _case_edge_loads,
         notes="smem: the three boxes as loaded into 0xA5-filled shared memory; status[0]: the barrier completed "
               "(the zero-filled bytes count)"),
    Case("edge_stores", "TMA 2D stores of a 128 x 32 box (64B swizzle) into a 5 x 13 uint16 matrix with rows 16 "
         "elements apart, at (0, 0) (clipped at row 5 and column 13), (32, 0) (wholly right) and (0, 128) (wholly "
         "below)", _case_edge_stores,
         notes="global: D's whole backing array, 0x7777 before (the padding columns 13-15 must keep it); "
               "status[0]: the stores' reads waited for"),
]
CASES += [
    Case("ragged_loads", "TMA 2D loads of a 128 x 32 box (64B swizzle) from a 5 x 13 uint16 view of a 5 x 32 array "
         "(every element distinct, the padding columns too), at (0, 0) (N = 13 ends inside a 16-byte chunk) and "
         "(16, 0) (a box that starts past N, inside the pitch)", _case_ragged_loads,
         notes="smem: the two boxes as loaded; do the padding columns 13-15 load as zeros or as memory?"),
    Case("ragged_stores", "TMA 2D stores of a 128 x 32 box (64B swizzle) into 5 x 17 uint16 views of two 5 x 32 "
         "arrays (0x7777 before), at (0, 0) and at (16, 0)", _case_ragged_stores,
         notes="global_a/global_b: the backing arrays; which of columns 17-31 the clipped boxes write tells the "
               "store's granularity at the edge (16 B: up to column 23; 32 B or the pitch: up to 31)"),
]
CASES += [
    Case("mode_stores", "TMA 2D stores clipped at a ragged N in three more settings: no swizzle (uint16, N = 21), "
         "128B (uint16, N = 41) and 32B (uint32, N = 5), each into a view of a wider array of 0x77", _case_mode_stores,
         notes="each backing array: which columns past N the store wrote (the 16-byte chunk rule predicts up to "
               "columns 23, 47 and 7)"),
]
CASE_BY_NAME = {c.name: c for c in CASES}
DATA = os.path.join(ROOT, "tests", "data", "h200_ground_truth_i23.json")


def main(argv=None):
    from tests.hopper.record import metadata

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DATA)
    args = ap.parse_args(argv)
    doc = {"about": __doc__.split("\n\n")[0], **metadata(), "cases": {}}
    for case in CASES:
        t0 = time.time()
        try:
            rec = {"outputs": encode_outputs(case.run("gpu")), "seconds": round(time.time() - t0, 2)}
        except Exception as e:  # noqa: BLE001
            rec = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
        doc["cases"][case.name] = {"what": case.what, "notes": case.notes, **rec}
        print(case.name, "ok" if "outputs" in rec else rec["error"], flush=True)
    doc["date_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
