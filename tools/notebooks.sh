#!/usr/bin/env bash
# Open the chapters as notebooks in JupyterLab (README, "The chapters as notebooks").
#
# Installs the optional requirements-notebook.txt (JupyterLab) into .venv, made by tools/setup.sh,
# tells JupyterLab to open MyST Markdown files with jupytext's notebook view (a double-click on a
# chapter then opens it as a notebook, not as text), and starts JupyterLab in chapters/.
# BACKEND: GEMM_BOOK_BACKEND=emulator|blackwell|auto tools/notebooks.sh  (default auto).
# VENV: the virtual environment to use or create (default .venv, as for tools/setup.sh).
# Arguments go to JupyterLab, e.g. tools/notebooks.sh --no-browser --ip=127.0.0.1 --port=8888
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    VENV="$VENV" tools/setup.sh
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-notebook.txt
settings="$VENV/share/jupyter/lab/settings"
mkdir -p "$settings"
cat > "$settings/overrides.json" <<'JSON'
{
  "@jupyterlab/docmanager-extension:plugin": {
    "defaultViewers": {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
  },
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}
}
JSON
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$VENV/bin/jupyter" lab chapters/ "$@"
