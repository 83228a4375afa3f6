"""semantic/ is the one home of semantic routing: quality/ and the CLI reach it without server/."""

from __future__ import annotations

import subprocess
import sys


def test_semantic_and_quality_import_nothing_of_the_server() -> None:
    # A fresh interpreter: the test session has imported server/ long ago.
    code = ("import sys, semproxy.semantic.router, semproxy.semantic.explain, "
            "semproxy.quality.commands, semproxy.quality.tuning; "
            "print(sorted(m for m in sys.modules if m.startswith('semproxy.server')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_importing_the_package_loads_no_model() -> None:
    code = ("import sys, semproxy.semantic; "
            "print([m for m in ('wordllama', 'semproxy.embeddings.local') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
