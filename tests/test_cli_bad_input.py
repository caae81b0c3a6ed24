"""Every subcommand, given bad arguments, says what is wrong in ONE line on stderr, exits non-zero and
prints no traceback: before anything runs (a missing output folder is found before an hour of
benchmarking, not after)."""
from __future__ import annotations

import pytest

from gemm_kernels.cli import main, subcommand_modules

BAD = [
    # (argv, a fragment of the one line)
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["info", "--bogus"], "unrecognized arguments: --bogus"),
    (["sass"], "one of the arguments --chapter --kernel is required"),
    (["sass", "--chapter", "12"], "no chapter 12"),
    (["sass", "--chapter", "8", "--arch", "sm_90a", "--summary"],
     "chapter 8 uses tcgen05 (the Blackwell tensor core's instructions), which sm_90a does not have"),
    (["sass", "--chapter", "1", "--arch", "sm_100", "--summary"], "which sm_100 does not have"),
    (["sass", "--chapter", "1", "--arch", "sm_70"], "unknown arch 'sm_70'"),
    (["sass", "--chapter", "1", "--sig", "garbage"], "NameError: name 'garbage' is not defined"),
    (["sass", "--chapter", "1", "--max-registers", "0"], "--max-registers: 0 is not positive"),
    (["sass", "--chapter", "1", "--summary", "--out", "/nonexistent/x.txt"], "the folder /nonexistent does not exist"),
    (["sass", "--kernel", "gemm_kernels.kernels.v4_tma:gemm_v4_kernel"], "--kernel needs --sig"),
    (["sass", "--kernel", "no_such_module:f", "--sig", "void()"], "cannot import module 'no_such_module'"),
    (["sass", "--kernel", "nocolon", "--sig", "void()"], "wants package.module:function"),
    (["verify"], "the following arguments are required: --chapter"),
    (["verify", "--chapter", "12"], "no chapter 12"),
    (["verify", "--chapter", "3", "--m", "200", "--backend", "emulator"], "multiple of 128"),
    (["verify", "--chapter", "3", "--m", "0"], "--m: 0 is not positive"),
    (["verify", "--chapter", "1", "--k", "128"], "computes exactly one tile"),
    (["verify", "--chapter", "3", "--policy", "fast"], "invalid choice: 'fast'"),
    (["verify", "--chapter", "3", "--seed", "-1"], "--seed: -1 is not >= 0"),
    (["trace", "--chapter", "3"], "the following arguments are required: --out"),
    (["trace", "--chapter", "12", "--out", "x.png"], "no chapter 12"),
    (["trace", "--chapter", "3", "--out", "/nonexistent/t.png"], "the folder /nonexistent does not exist"),
    (["trace", "--chapter", "3", "--out", "{tmp}"], "is a folder; give a file name"),
    (["trace", "--chapter", "3", "--out", "{tmp}/t.png", "--json", "/nonexistent/t.json"], "--json /nonexistent"),
    (["trace", "--chapter", "3", "--out", "{tmp}/t.png", "--max-ctas", "0"], "--max-ctas: 0 is not positive"),
    (["trace", "--chapter", "3", "--out", "{tmp}/t.png", "--m", "200"], "multiple of 128"),
    (["trace", "--chapter", "3", "--out", "{tmp}/t.png", "--backend", "blackwell"], "needs a B200"),
    (["bench", "--chapters", "x"], "bad --chapters 'x'"),
    (["bench", "--chapters", "12", "--backend", "emulator"], "no chapter(s) [12]"),
    (["bench", "--sizes", "2048,abc"], "bad --sizes '2048,abc'"),
    (["bench", "--sizes", "0"], "0 is not positive"),
    (["bench", "--pipe-depth", "0"], "bad --pipe-depth '0'"),
    (["bench", "--rounds", "0"], "--rounds: 0 is not positive"),
    (["bench", "--warmup", "-1"], "--warmup: -1 is not >= 0"),
    (["bench", "--backend", "emulator", "--json", "/nonexistent/b.json"], "the folder /nonexistent does not exist"),
    (["bench", "--backend", "emulator", "--plot", "/nonexistent/b.png"], "the folder /nonexistent does not exist"),
    (["bench", "--backend", "emulator", "--cublas-only"], "--cublas-only needs a GPU"),
    (["bench", "--chapters", "7"], "refusing to run: found no CUDA GPU"),
]


def _run(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse
        rc = e.code
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("argv, says", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_arguments_get_one_line(argv, says, capsys, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    rc, out, err = _run(argv, capsys)
    assert rc not in (0, None), (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert says in lines[0], lines[0]
    assert "Traceback" not in out + err and out == "", out


def test_every_subcommand_is_driven_with_bad_input():
    assert {argv[0] for argv, _ in BAD if not argv[0].startswith("-")} == set(subcommand_modules())
