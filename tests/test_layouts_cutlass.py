"""gemm_kernels.layouts against an independent implementation: CUTLASS/CuTe's C++ headers.

tests/cutlass_oracle/oracle.cpp (host-only C++17) prints CuTe's instruction descriptors
(``UMMA::make_instr_desc``), matrix descriptors (``UMMA::SmemDescriptor`` bit fields, and
``UMMA::make_umma_desc`` of canonical K-major tiles), ``Swizzle<B,4,3>`` and the 128B-swizzled
K-major fp16 tile layout; every value is compared with the Python encoders. Needs g++ and the
``nvidia-cutlass==4.2.0.0`` wheel (headers only; see tests/cutlass_oracle/README.md) and the CUDA C
runtime headers from the ``nvidia-cuda-runtime`` and ``nvidia-cuda-crt`` wheels (requirements.txt), so
no CUDA toolkit is needed. Skips with the reason when one is missing, which the full CI run
(GEMM_KERNELS_FULL_CI=1, tests/conftest.py) turns into a failure.
"""
import importlib.util
import itertools
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gemm_kernels import layouts as L

ORACLE_SRC = Path(__file__).parent / "cutlass_oracle" / "oracle.cpp"


def _cutlass_include():
    try:
        spec = importlib.util.find_spec("cutlass_library")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None
    inc = Path(spec.origin).parent / "source" / "include"
    return inc if (inc / "cute" / "arch" / "mma_sm100_desc.hpp").is_file() else None


def _cuda_include():
    """A CUDA include directory with cuda_runtime_api.h and crt/host_defines.h (CuTe's config
    pulls in the CUDA runtime headers even on the host)."""
    candidates = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    try:
        import nvidia  # the pip CUDA wheels (namespace package)

        for root in nvidia.__path__:
            candidates += [Path(root) / "cu13" / "include", Path(root) / "cuda_runtime" / "include"]
    except ImportError:
        pass
    for inc in candidates:
        if (inc / "cuda_runtime_api.h").is_file() and (inc / "crt" / "host_defines.h").is_file():
            return inc
    return None


@pytest.fixture(scope="session")
def oracle(tmp_path_factory):
    """The oracle's output, parsed: compiled and run once per session."""
    return run_oracle(ORACLE_SRC, tmp_path_factory, ("IDESC", "SMEM", "UMMA", "SWZ", "TILE"))


def run_oracle(src, tmp_path_factory, kinds):
    """Compile the host-only C++ program ``src`` against CUTLASS's headers, run it, and return its
    records {kind: [fields of each line starting with kind]}; skips (with what to install) when g++
    or the headers are missing."""
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("g++ not found: install it (Debian: apt-get install g++) to cross-check against CUTLASS")
    cutlass_inc = _cutlass_include()
    if cutlass_inc is None:
        pytest.skip("CUTLASS headers not found: pip install --no-deps nvidia-cutlass==4.2.0.0 "
                    "(see tests/cutlass_oracle/README.md)")
    cuda_inc = _cuda_include()
    if cuda_inc is None:
        pytest.skip("CUDA headers (cuda_runtime_api.h + crt/host_defines.h) not found: pip install "
                    "nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37 (tools/setup.sh does), or set CUDA_HOME")
    exe = tmp_path_factory.mktemp("cutlass_oracle") / Path(src).stem
    cmd = [cxx, "-std=c++17", "-O0", "-Wno-deprecated-declarations", f"-I{cutlass_inc}",
           f"-I{cuda_inc / 'cccl'}", f"-I{cuda_inc}", str(src), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"oracle did not compile:\n{' '.join(cmd)}\n{build.stderr[-4000:]}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out = {kind: [] for kind in kinds}
    for line in run.stdout.splitlines():
        # CuTe prints "ERROR: cast_smem_ptr_to_uint not supported" on the host: start address 0
        kind, _, rest = line.partition(" ")
        if kind in out:
            out[kind].append(rest.split())
    return out


def test_instr_desc_matches_cutlass(oracle):
    rows = oracle["IDESC"]
    assert len(rows) == 3 * 32 * 2 * 2 * 4
    compared = rejected = 0
    for m, n, ab, acc, am, bm, value in rows:
        m, n, value = int(m), int(n), int(value, 16)
        valid = False
        for group in (1, 2):
            try:
                ours = L.make_instr_desc(m, n, ab_dtype=ab, acc_dtype=acc, a_major=am, b_major=bm,
                                         cta_group=group)
            except ValueError:
                continue
            valid = True
            assert ours == value, (m, n, ab, acc, am, bm, group, hex(ours), hex(value))
            compared += 1
        if not valid:  # CuTe encodes any N; the PTX shape table allows fewer
            rejected += 1
            assert (m == 128 and n % 16) or (m == 256 and n % 16), (m, n)
        d = L.decode_instr_desc(value)
        assert (d["m"], d["n"], d["ab_dtype"], d["acc_dtype"], d["a_major"], d["b_major"]) == (m, n, ab, acc, am, bm)
    # per dtype/major combination: ::1 M=64 (32 N) + M=128 (16 N), ::2 M=128 and M=256 (16 N each)
    assert compared == 16 * (32 + 16 + 16 + 16)
    assert rejected == 16 * (16 + 16)


def test_smem_desc_matches_cutlass(oracle):
    rows = oracle["SMEM"]
    assert len(rows) == 12 * 6 * 6 * 5 * 3
    for addr, lbo, sbo, code, base, value in rows:
        addr, lbo, sbo, code, base = (int(x) for x in (addr, lbo, sbo, code, base))
        value = int(value, 16)
        swz = L.SWIZZLE_NAMES[code]
        assert L.make_smem_desc(addr, lbo=lbo, sbo=sbo, swizzle=swz, base_offset=base) == value, (
            addr, lbo, sbo, swz, base)
        assert int(L.smem_desc_dev.py_func(addr, lbo, sbo, code, base)) == value
        d = L.decode_smem_desc(value)
        assert (d["start_addr"], d["lbo"], d["sbo"], d["swizzle"], d["base_offset"]) == (
            addr & 0x3FFFF, lbo, sbo, swz, base)


def test_canonical_k_major_descriptors_match_cutlass(oracle):
    """CuTe's make_umma_desc of 128-row K-major fp16 tiles (start address 0 on the host): LBO 16 B,
    SBO = 8 rows of the swizzle span, and the layout code of the swizzle."""
    got = {name: int(value, 16) for name, _rows, _cols, value in oracle["UMMA"]}
    assert set(got) == {"128B", "64B", "32B"}
    for name, value in got.items():
        span = L.SWIZZLE_SPAN_BYTES[name]
        assert L.make_smem_desc(0, lbo=16, sbo=8 * span, swizzle=name) == value, name
    assert int(L.smem_desc_sw128_kmajor_dev.py_func(0, 1024)) == got["128B"]


def test_swizzles_match_cute(oracle):
    modes = {0: "none", 1: "32B", 2: "64B", 3: "128B"}
    assert len(oracle["SWZ"]) == 4
    for bits, first, count, *values in oracle["SWZ"]:
        off = np.arange(int(first), int(first) + int(count))
        cute = np.array(values, dtype=np.int64)
        assert np.array_equal(L.swizzle(off, modes[int(bits)]), cute), modes[int(bits)]
        mask = L.SWIZZLE_ROW_MASKS[modes[int(bits)]]
        for o in itertools.islice(off, 0, None, 37):
            assert int(L.swizzle_dev.py_func(int(o), mask)) == cute[o]


def test_k_major_sw128_tile_matches_cute(oracle):
    (rows, cols, *values), = oracle["TILE"]
    rows, cols = int(rows), int(cols)
    cute = np.array(values, dtype=np.int64).reshape(rows, cols)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    assert np.array_equal(L.tile_offset_k_major_sw128(r, c), cute)
