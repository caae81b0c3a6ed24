#!/usr/bin/env bash
# Open the chapters as notebooks in JupyterLab (README, "The chapters as notebooks").
#
# Installs the optional requirements-notebook.txt (JupyterLab) into .venv, made by tools/setup.sh,
# tells JupyterLab to open MyST Markdown files with jupytext's notebook view (a double-click on a
# chapter then opens it as a notebook, not as text), and starts JupyterLab in chapters/.
# BACKEND: GEMM_BOOK_BACKEND=emulator|blackwell|auto tools/notebooks.sh  (default auto).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    tools/setup.sh
fi
.venv/bin/python -m pip install -q -r requirements-notebook.txt
settings=.venv/share/jupyter/lab/settings
mkdir -p "$settings"
cat > "$settings/overrides.json" <<'JSON'
{
  "@jupyterlab/docmanager-extension:plugin": {
    "defaultViewers": {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
  }
}
JSON
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/jupyter lab chapters/ "$@"
