#!/usr/bin/env bash
# Set up (first run only), then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh full
.venv/bin/python scripts/check_file_sizes.py
.venv/bin/python scripts/check_docs.py
.venv/bin/ruff check src tests
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
