#!/usr/bin/env bash
# Set up (first run only) and start the gateway on the embedded default config.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh runtime
exec .venv/bin/semproxy serve --config "${1:-examples/quickstart.yaml}"
