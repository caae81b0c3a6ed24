#!/usr/bin/env bash
# Set up the project's virtual environment in .venv (or $VENV) on a CPU-only Linux machine with
# Python 3.11. Both README commands (build the book, run the tests) start with this script, so
# they share one set-up. Safe to run again: an existing venv is reused and brought up to date.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV with $($PYTHON --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi

"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
# The pinned set, the package itself in editable mode (-e .) included.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt
# CUTLASS's C++ headers, for the tests that cross-check our descriptor encoders against CUTLASS's
# own (compiled with g++ on the host). --no-deps: only the headers are needed, not its Python stack.
# The CUDA C runtime headers those programs include come from requirements.txt (nvidia-cuda-runtime,
# nvidia-cuda-crt): no CUDA toolkit is needed, and CI fails if the cross-check cannot run.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps nvidia-cutlass==4.2.0.0

if ! command -v g++ >/dev/null 2>&1; then
    echo "setup: note: g++ not found; the CUTLASS cross-check tests need it (Debian: apt-get install -y g++)" >&2
fi
echo "setup: $VENV ready ($("$VENV/bin/python" --version 2>&1))"
