#!/usr/bin/env bash
# Soak the gateway under load with faults (bench/soak.py), 10 minutes by default.
#   bash scripts/soak.sh [--minutes N] [--short] [--out report.json]
# --short (45 s) is what CI runs. The full run also storms the config watcher for
# 60 s (tests/reliability/test_reload_storm.py with SEMPROXY_STORM_SECONDS=60).
# PYTHON picks the interpreter (default: .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
export PYTHONPATH="src:.${PYTHONPATH:+:$PYTHONPATH}"
"$PY" bench/soak.py "$@"
case " $* " in
  *" --short "*) ;;
  *) SEMPROXY_STORM_SECONDS=60 "$PY" -m pytest -q -p no:cacheprovider \
       tests/reliability/test_reload_storm.py ;;
esac
