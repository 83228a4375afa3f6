#!/usr/bin/env bash
# Check the locked dependencies (constraints.txt) against known vulnerabilities.
# pip-audit asks an advisory service (the PyPI JSON API, or OSV); when neither
# answers (an offline or mirror-only machine), say so loudly and exit 0: an
# unreachable service is not a finding. A reachable service with findings fails.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
service=$("$PY" - <<'PYEOF'
import json
import urllib.request

probes = {"pypi": "https://pypi.org/pypi/pip/24.0/json", "osv": "https://api.osv.dev/v1/query"}
for name, url in probes.items():
    try:
        if name == "osv":
            data = json.dumps({"package": {"name": "pip", "ecosystem": "PyPI"},
                               "version": "24.0"}).encode()
            req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
        else:
            req = urllib.request.Request(url)
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.load(resp)
        if "vulns" in body or "vulnerabilities" in body:
            print(name)
            break
    except Exception:  # any failure means: this service cannot be used from here
        continue
PYEOF
)
if [ -z "$service" ]; then
  echo "pip-audit: SKIPPED, no advisory service reachable (pypi.org JSON API, api.osv.dev);" \
       "constraints.txt was NOT audited" >&2
  exit 0
fi
echo "pip-audit: auditing constraints.txt against $service" >&2
exec "$PY" -m pip_audit -r constraints.txt --no-deps --disable-pip -s "$service" --progress-spinner off
