"""The sm_100a build path (no GPU needed): PTX -> cubin -> SASS, the resource report, the `sass` CLI,
TensorMap2D's rules and the GPU probe on a machine without a GPU."""
import os
import subprocess
import sys

import pytest

from gemm_kernels.runtime import ensure_numpy_compat

ensure_numpy_compat()

from numba import cuda  # noqa: E402

from gemm_kernels.runtime.build import Build, build, find_nvdisasm, parse_resource_log, parse_sass_opcodes  # noqa: E402
from gemm_kernels.runtime.device import gpu_info, require_blackwell  # noqa: E402
from gemm_kernels.runtime.tensormap import TensorMap2D  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # `tests.kernels_for_build` must import however pytest was started
    sys.path.insert(0, ROOT)

from tests import kernels_for_build as kb  # noqa: E402
needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm not installed")


@pytest.fixture(scope="module")
def mbar_build() -> Build:
    return build(kb.mbar_kernel, kb.MBAR_SIG)


def test_ptx_targets_sm_100a(mbar_build):
    assert ".target sm_100a" in mbar_build.ptx
    assert "mbarrier.init.shared::cta.b64" in mbar_build.ptx
    assert mbar_build.cubin[:4] == b"\x7fELF"


def test_resources(mbar_build):
    assert mbar_build.registers > 0
    assert mbar_build.local_bytes == 0
    assert mbar_build.spill_stores == 0 and mbar_build.spill_loads == 0
    assert mbar_build.shared_bytes >= 8  # the one uint64 barrier


@needs_nvdisasm
def test_sass_has_mbarrier_init(mbar_build):
    assert "SYNCS.EXCH.64" in mbar_build.sass
    assert mbar_build.count("SYNCS.EXCH.64") == 1
    assert mbar_build.count("SYNCS") >= 1
    assert mbar_build.opcodes["SYNCS.EXCH.64"] == 1
    assert mbar_build.opcodes["SYNCS"] == 1          # base lookup sums the full opcodes
    assert "SYNCS" in mbar_build.opcodes
    assert mbar_build.histogram()["SYNCS"] == 1
    assert mbar_build.histogram(base=False)["SYNCS.EXCH.64"] == 1
    assert mbar_build.histogram()["EXIT"] >= 1


def test_summary_text(mbar_build):
    s = mbar_build.summary()
    for word in ("registers", "static smem", "local memory", "spills", "opcode"):
        assert word in s


def test_dispatcher_and_function_share_the_cache():
    jitted = cuda.jit(kb.mbar_kernel)
    assert build(jitted, kb.MBAR_SIG) is build(kb.mbar_kernel, kb.MBAR_SIG)


def test_sm90a_build():
    b = build(kb.cluster_probe, kb.CLUSTER_PROBE_SIG, arch="sm_90a")
    assert ".target sm_90a" in b.ptx
    assert "%cluster_ctarank" in b.ptx
    assert b.registers > 0 and b.local_bytes == 0


def test_max_registers_and_lineinfo():
    from gemm_kernels import CHAPTERS

    ch = CHAPTERS[3]
    uncapped = build(ch.kernel, ch.signature)
    capped = build(ch.kernel, ch.signature, max_registers=56, lineinfo=True)
    assert uncapped.registers > 56, "pick a cap below the kernel's natural register count"
    assert 0 < capped.registers <= 56
    assert ".loc" in capped.ptx and ".loc" not in uncapped.ptx


def test_unknown_arch():
    with pytest.raises(ValueError, match="unknown arch"):
        build(kb.mbar_kernel, kb.MBAR_SIG, arch="sm_77")


def test_parsers():
    log = ("ptxas         .     16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers\n"
           "info    : used 40 registers, used 1 barriers, 16 stack, 2048 bytes smem, 16 bytes lmem\n")
    r = parse_resource_log(log)
    assert (r["registers"], r["local_bytes"], r["spill_stores"], r["spill_loads"], r["shared_bytes"]) == \
        (40, 16, 4, 8, 2048)
    sass = ("        /*0000*/                   LDC R1, c[0x0][0x37c] ;\n"
            "        /*0010*/               @!P0 UTMALDG.2D [UR8], [UR4] ;\n"
            "        /*0020*/                   UTMALDG.3D [UR8], [UR4] ;\n"
            "        /*0030*/              @UP0 SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [UR4], RZ ;\n")
    c = parse_sass_opcodes(sass)
    assert c["UTMALDG.2D"] == 1 and c["UTMALDG"] == 2 and c["SYNCS.ARRIVE"] == 1 and c["LDC"] == 1


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "gemm_kernels", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@needs_nvdisasm
def test_cli_sass_summary():
    r = _cli("sass", "--kernel", "tests.kernels_for_build:mbar_kernel", "--sig", kb.MBAR_SIG, "--summary")
    assert r.returncode == 0, r.stderr
    assert "registers" in r.stdout and "SYNCS" in r.stdout and "sm_100a" in r.stdout


@needs_nvdisasm
def test_cli_sass_listing():
    r = _cli("sass", "--kernel", "tests.kernels_for_build:mbar_kernel", "--sig", kb.MBAR_SIG)
    assert r.returncode == 0, r.stderr
    assert "SYNCS.EXCH.64" in r.stdout


def test_cli_errors():
    r = _cli("sass", "--kernel", "tests.kernels_for_build:no_such_kernel", "--sig", "void()")
    assert r.returncode == 2 and "no attribute" in r.stderr
    r = _cli("sass", "--kernel", "tests.kernels_for_build:mbar_kernel")
    assert r.returncode == 2 and "--sig" in r.stderr


def test_cli_info():
    r = _cli("info")
    assert r.returncode == 0, r.stderr
    assert "numba-cuda" in r.stdout and "nvdisasm" in r.stdout and "gpu" in r.stdout


# -- TensorMap2D ---------------------------------------------------------------------------------

def test_tensormap_ok():
    tm = TensorMap2D.for_matrix(256, 512, "float16", box=(128, 64), swizzle="128B")
    assert tm.row_stride == 1024 and tm.box_bytes == 16384 and tm.box_inner_bytes == 128
    assert tm.smem_alignment() == 1024
    import numpy as np
    tm2 = TensorMap2D.for_array(np.zeros((256, 512), np.float16), box=(128, 64))
    assert tm2 == tm


@pytest.mark.parametrize("kwargs, rule", [
    (dict(dtype="float16", dims=(64, 100), row_stride=200, box=(64, 64)), "row stride must be a multiple of 16"),
    (dict(dtype="float16", dims=(512, 512), row_stride=1024, box=(128, 128), swizzle="128B"),
     "swizzle span"),
    (dict(dtype="float16", dims=(512, 512), row_stride=1024, box=(64, 32), swizzle="32B"), "swizzle span"),
    (dict(dtype="float16", dims=(512, 512), row_stride=1024, box=(512, 64)), "box dims"),
    (dict(dtype="float16", dims=(512, 512), row_stride=1024, box=(64, 4), swizzle="none"),
     "box inner dimension must be a multiple of 16"),
    (dict(dtype="float16", dims=(512, 512), row_stride=1024, box=(64, 64), swizzle="16B"), "swizzle must be"),
    (dict(dtype="float16", dims=(512, 512), row_stride=512, box=(64, 64)), "rows would overlap"),
    (dict(dtype="complex64", dims=(8, 8), row_stride=64, box=(8, 8)), "dtype"),
    (dict(dtype="float16", dims=(0, 8), row_stride=16, box=(8, 8)), "global dims"),
])
def test_tensormap_rules(kwargs, rule):
    with pytest.raises(ValueError, match=rule):
        TensorMap2D(**kwargs)


def test_tensormap_address_alignment():
    tm = TensorMap2D.for_matrix(256, 512, "float16", box=(128, 64))
    tm.check_address(0x7F0000001000)
    with pytest.raises(ValueError, match="16-byte aligned"):
        tm.check_address(0x7F0000001008)


# -- no GPU here ---------------------------------------------------------------------------------

@pytest.mark.skipif(gpu_info() is not None, reason="a GPU is present")
def test_no_gpu(capfd):
    assert gpu_info() is None
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        require_blackwell()
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_cli_chapter_lookup(monkeypatch, capsys):
    """`sass --chapter N` takes the kernel and signature from gemm_kernels.CHAPTERS[N]."""
    import types as pytypes

    import gemm_kernels
    from gemm_kernels.cli import main

    entry = pytypes.SimpleNamespace(kernel=cuda.jit(kb.mbar_kernel), signature=kb.MBAR_SIG)
    monkeypatch.setattr(gemm_kernels, "CHAPTERS", {1: entry}, raising=False)
    assert main(["sass", "--chapter", "1", "--summary"]) == 0
    assert "registers" in capsys.readouterr().out
    assert main(["sass", "--chapter", "7"]) == 2
    assert "no chapter 7" in capsys.readouterr().err
