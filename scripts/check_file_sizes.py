"""Fail when any file of the package grows past the house limit of 800 lines."""

import sys
from pathlib import Path

LIMIT = 800
root = Path(__file__).resolve().parent.parent / "src" / "semproxy"
too_big = [(p, n) for p in sorted(root.rglob("*.py"))
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT]
for path, lines in too_big:
    print(f"{path.relative_to(root.parent.parent)}: {lines} lines (limit {LIMIT})")
sys.exit(1 if too_big else 0)
