#!/usr/bin/env bash
# The tests that exercise the aiohttp internals semproxy relies on, against the newest
# aiohttp release rather than the pinned one (pyproject.toml caps aiohttp below its next
# minor release; this job says early whether that release still works).
#   bash scripts/newest_aiohttp.sh
# A second venv (.venv-aiohttp) with semproxy's runtime dependencies at their pinned
# versions, except aiohttp (and what it needs) at the newest; semproxy itself runs from
# src/. It fails on any failing test, a warning included (warnings are errors).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv-aiohttp
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
grep -v -E '^(aiohttp|multidict|yarl|propcache|aiosignal|frozenlist|aiohappyeyeballs|attrs)==' \
    constraints.txt > "$VENV/constraints.txt"
# semproxy's runtime dependencies as pyproject.toml lists them (so a new one is never
# missing here), aiohttp aside, plus the test runner.
mapfile -t DEPS < <("$PY" -c 'import tomllib
for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]:
    if not d.startswith("aiohttp"): print(d)')
"$VENV/bin/python" -m pip install -q -c "$VENV/constraints.txt" \
    "${DEPS[@]}" pytest pytest-asyncio hypothesis
"$VENV/bin/python" -m pip install -q --upgrade aiohttp
echo "aiohttp $("$VENV/bin/python" -c 'import aiohttp; print(aiohttp.__version__)')" \
     "(pinned: $(grep '^aiohttp==' constraints.txt | cut -d= -f3))"
PYTHONPATH=src "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    tests/transport tests/upstream tests/health tests/server/test_smoke.py \
    tests/server/test_streaming.py tests/server/test_shutdown.py \
    tests/reliability/test_headers.py tests/reliability/test_open_files.py \
    tests/reliability/test_slow_clients.py
