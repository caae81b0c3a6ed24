"""CI runs what the README tells a reader to run, and the linter is clean."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command(readme: str) -> str:
    """The README's one test command: the line that starts with tools/setup.sh and runs pytest."""
    commands = re.findall(r"^(tools/setup\.sh && .*-m pytest\b.*)$", readme, re.M)
    assert len(commands) == 1, f"README.md should give exactly one test command, found {commands}"
    return commands[0]


def executed_lines(script: str) -> list[str]:
    """The lines of a shell script that run: blank lines and comment lines dropped."""
    return [code for code in (line.strip() for line in script.splitlines()) if code and not code.startswith("#")]


def ci_runs(command: str, script: str) -> bool:
    """True if an executed line of ``script`` starts with ``command`` (as its own command, perhaps
    followed by ``|| status=$?``)."""
    return any(line == command or line.startswith(command + " ") for line in executed_lines(script))


def test_ci_runs_the_readme_test_command():
    command = readme_test_command((ROOT / "README.md").read_text())
    assert ci_runs(command, (ROOT / ".ci" / "run").read_text()), f".ci/run does not run {command!r}"


def test_a_command_in_a_comment_does_not_count():
    cmd = "tools/setup.sh && .venv/bin/python -m pytest -q"
    assert not ci_runs(cmd, f"#!/bin/bash\n# we run:\n#     {cmd}\necho hi\n")
    assert not ci_runs(cmd, f"echo '{cmd}'\n")
    assert ci_runs(cmd, f"# a comment\nstatus=0\n{cmd} || status=$?\n")


def test_readme_command_lints_then_tests_with_skip_reasons():
    command = readme_test_command((ROOT / "README.md").read_text())
    assert re.search(r"ruff check .*&& .*-m pytest", command), "the linter runs before the tests"
    assert " -rs" in command, "pytest prints the reason of every skip"


def test_ruff_is_clean():
    """The pyflakes rules (pyproject.toml [tool.ruff]) on the package, the tests and the tools."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed: it is pinned in requirements.txt (tools/setup.sh installs it)")
    res = subprocess.run([ruff, "check", "gemm_kernels", "tests", "tools"], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_ci_marks_itself_the_full_run():
    """.ci/run exports GEMM_KERNELS_FULL_CI=1 before the tests: then a skip of anything but the
    blackwell/hopper tests (the CUTLASS cross-check, say) fails the run (tests/conftest.py)."""
    lines = executed_lines((ROOT / ".ci" / "run").read_text())
    command = readme_test_command((ROOT / "README.md").read_text())
    exports = [i for i, line in enumerate(lines) if line == "export GEMM_KERNELS_FULL_CI=1"]
    runs = [i for i, line in enumerate(lines) if line.startswith(command)]
    assert exports and runs and exports[0] < runs[0]
