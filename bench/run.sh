#!/usr/bin/env bash
# semproxy benchmark, one command:
#
#   bash bench/run.sh            # 3 rounds x 10 s per scenario (~9 minutes)
#   bash bench/run.sh --quick    # 1 round x 3 s (smoke test, ~1-2 minutes)
#   bash bench/run.sh --fault [--quick] [options]   # fault benchmark (fault_bench.py)
#   bash bench/run.sh --instructions [--quick] [options]   # instructions per request
#                                  under valgrind callgrind (instructions.py, ~1 hour)
#
# Other options: --rounds N --duration S --streams N --threads N --no-micro --out FILE
# (see `bash bench/run.sh --help`).
#
# Environment:
#   PYTHON        interpreter with aiohttp, uvloop, orjson, numpy, wordllama
#                 (default: python3); also used to run the gateway
#   SEMPROXY_SRC  directory holding the semproxy package (default: <repo>/src);
#                 the gateway runs as
#                 PYTHONPATH=$SEMPROXY_SRC $PYTHON -m semproxy serve --config F --listen 127.0.0.1:P
#   WRK_THREADS   wrk threads (default 1)
#
# Installs the Debian packages wrk and nginx-light with apt-get when missing
# (needs root). Everything listens on 127.0.0.1 only. Configs and logs of the
# run are kept in bench/out/run-<timestamp>/; results go to bench/results.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
# A relative path is made absolute: the servers run with their log directory as cwd.
case "$PYTHON" in
  */*) PYTHON="$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")" ;;
esac
export PYTHON

# --fault: the fault benchmark (bench/fault_bench.py) instead; needs neither wrk nor nginx.
if [ "${1:-}" = "--fault" ]; then
  shift
  export BENCH_ENTRY="bash bench/run.sh --fault"
  exec "$PYTHON" "$HERE/fault_bench.py" "$@"
fi

# --instructions: instructions per request under valgrind (bench/instructions.py).
if [ "${1:-}" = "--instructions" ]; then
  shift
  export BENCH_ENTRY="bash bench/run.sh --instructions"
  export PATH="$PATH:/usr/sbin"
  exec "$PYTHON" "$HERE/instructions.py" "$@"
fi

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing ${missing[*]}: run as root or: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "installing ${missing[*]} with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
export PATH="$PATH:/usr/sbin"

export BENCH_ENTRY="bash bench/run.sh"
exec "$PYTHON" "$HERE/run.py" "$@"
