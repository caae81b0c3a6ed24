"""The command line: exit codes and what it prints, in-process (the builds are cached)."""
import numpy as np
import pytest

from gemm_kernels.__main__ import main


def test_verify_ok(capsys):
    assert main(["verify", "--chapter", "1", "--backend", "emulator"]) == 0
    out = capsys.readouterr().out
    assert "on emulator" in out and "-> OK" in out


def test_verify_mismatch_exits_1(capsys, monkeypatch):
    from gemm_kernels import CHAPTERS
    from gemm_kernels.chapters import Chapter

    good = CHAPTERS[1].entry

    def wrong(a, b, **kw):
        d = good(a, b, **kw)
        d[3, 4] += np.float16(1)
        return d

    monkeypatch.setattr(Chapter, "entry", property(lambda self: wrong))
    assert main(["verify", "--chapter", "1", "--backend", "emulator"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_verify_refuses(capsys):
    assert main(["verify", "--chapter", "12"]) == 2
    assert "no chapter 12" in capsys.readouterr().err
    assert main(["verify", "--chapter", "3", "--m", "200", "--backend", "emulator"]) == 2
    assert "multiple of 128" in capsys.readouterr().err


def test_sass_chapter_summary(capsys, tmp_path):
    assert main(["sass", "--chapter", "3", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "gemm_v3_kernel" in out and "UTCHMMA" in out and "local memory    0" in out
    ptx = tmp_path / "v1.ptx"
    assert main(["sass", "--chapter", "1", "--ptx", "--out", str(ptx)]) == 0
    assert ".target sm_100a" in ptx.read_text()
    assert main(["sass", "--chapter", "12"]) == 2


def test_trace_cli_refuses_bad_input(capsys):
    assert main(["trace", "--chapter", "12", "--out", "x.png"]) == 2
    assert main(["trace", "--chapter", "3", "--m", "200", "--out", "x.png"]) == 2


def test_bench_cli_refuses(capsys):
    assert main(["bench", "--chapters", "x"]) == 2
    assert main(["bench", "--chapters", "12", "--backend", "emulator"]) == 2
    assert main(["bench", "--backend", "emulator", "--cublas-only"]) == 2


def test_default_backend_says_emulator_once(capsys, monkeypatch):
    from gemm_kernels import gemm_v1
    from gemm_kernels.check import random_operands
    from gemm_kernels.kernels import host
    from gemm_kernels.runtime import device

    monkeypatch.setattr(device, "gpu_info", lambda *a, **k: None)
    monkeypatch.setattr(host, "_said", set())
    a, b = random_operands(128, 128, 64)
    gemm_v1(a, b)
    assert capsys.readouterr().err == "gemm_v1: found no CUDA GPU; running on the emulator\n"
    gemm_v1(a, b)
    assert capsys.readouterr().err == ""


def test_compare_checks_the_result_contract():
    from gemm_kernels.check import compare, random_operands, reference

    a, b = random_operands(128, 128, 64)
    d = reference(a, b)
    assert compare(d, a, b).ok
    bad = d.copy()
    bad[0, 0] = np.nan
    assert not compare(bad, a, b).ok
    with pytest.raises(ValueError, match="expected float16"):
        compare(d.astype(np.float32), a, b)
    with pytest.raises(ValueError, match="expected float16"):
        compare(d[:, :64], a, b)


def test_tensor_map_driver_arguments():
    """The driver wants (cols, rows): innermost dimension first. A swap here would load transposed
    tiles on a B200 and pass every emulator test, so it is checked on its own."""
    from gemm_kernels.runtime.tensormap import TensorMap2D

    desc = TensorMap2D.for_matrix(256, 512, "float16", box=(128, 64))
    args = desc.driver_args(0x7F0000001000)
    assert [int(x) for x in args[3]] == [512, 256]  # global dims, innermost first
    assert [int(x) for x in args[4]] == [1024]  # row stride in bytes
    assert [int(x) for x in args[5]] == [64, 128]  # box, innermost first
    assert args[8].name == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert args[10].name == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"  # out-of-bounds elements read as zero
    with pytest.raises(ValueError, match="16-byte aligned"):
        desc.driver_args(0x7F0000001008)


def test_launch_refuses_before_touching_a_gpu():
    from gemm_kernels.runtime.launch import launch
    from tests.kernels_for_build import cluster_probe

    with pytest.raises(ValueError, match="multiple of the cluster"):
        launch(cluster_probe, 3, 32, (None, 0), cluster=(2, 1, 1))
    with pytest.raises(ValueError, match="more than 1024"):
        launch(cluster_probe, 2, 2048, (None, 0))


@pytest.mark.parametrize("idesc,group,needle", [
    ((1 << 4) | (1 << 2) | ((128 >> 3) << 17) | ((128 >> 4) << 24), 1, "sparsity"),
    ((3 << 4) | ((128 >> 3) << 17) | ((128 >> 4) << 24), 1, "D format"),
    ((1 << 4) | (2 << 7) | ((128 >> 3) << 17) | ((128 >> 4) << 24), 1, "A/B formats"),
    ((1 << 4) | (1 << 15) | ((128 >> 3) << 17) | ((128 >> 4) << 24), 1, "MN-major"),
    ((1 << 4) | ((128 >> 3) << 17) | ((64 >> 4) << 24), 1, "M=64"),
    ((1 << 4) | ((128 >> 3) << 17) | ((128 >> 4) << 24), 2, "M=128"),
    ((1 << 4) | ((120 >> 3) << 17) | ((256 >> 4) << 24), 2, "multiple of"),
])
def test_instruction_descriptor_rules(idesc, group, needle):
    from gemm_kernels.emu.errors import DescriptorError
    from gemm_kernels.emu.tensor_core import check_instr_desc, decode_instr_desc

    with pytest.raises(DescriptorError, match=needle):
        check_instr_desc(decode_instr_desc(idesc), group)


@pytest.mark.parametrize("extra,needle", [(1 << 52, "LBO mode"), (1 << 61, "128B_BASE32B"), (1 << 49, "base offset")])
def test_matrix_descriptor_rules(extra, needle):
    from gemm_kernels.emu.errors import DescriptorError
    from gemm_kernels.emu.tensor_core import operand_addresses
    from gemm_kernels.layouts import make_smem_desc

    desc = make_smem_desc(0x400, lbo=16, sbo=1024, swizzle="none") | extra
    with pytest.raises(DescriptorError, match=needle):
        operand_addresses(desc, 128, "A")


def test_verify_reports_an_emulator_diagnostic(capsys, monkeypatch):
    """A kernel the emulator stops (here: a planted deadlock) exits 1 with the diagnostic's name."""
    from gemm_kernels.chapters import Chapter
    from gemm_kernels.emu.errors import Deadlock

    def stuck(a, b, **kw):
        raise Deadlock("every live thread is blocked (planted)")

    monkeypatch.setattr(Chapter, "entry", property(lambda self: stuck))
    assert main(["verify", "--chapter", "1", "--backend", "emulator"]) == 1
    assert "Deadlock" in capsys.readouterr().err


def test_trace_cli_draws(tmp_path, capsys):
    out = tmp_path / "v1.png"
    assert main(["trace", "--chapter", "1", "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000
    assert "virtual time (model)" in capsys.readouterr().out
