"""Fail when the English and Chinese docs drift apart or the config reference is stale.

    python scripts/check_docs.py [DOCS_DIR]

Every page under DOCS_DIR/en (default: the repository's docs/) must exist under
DOCS_DIR/zh with the same heading structure (the same sequence of heading levels;
headings inside fenced code blocks do not count). Without DOCS_DIR, the
repository's docs/en|zh/configuration.md must also equal what
scripts/gen_config_reference.py renders from the schema. Exit 1 with one message
per problem on stderr.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

_HEADING = re.compile(r"^(#{1,6})\s+\S")
_FENCE = re.compile(r"^\s*(```|~~~)")


def heading_levels(text: str) -> list[int]:
    """The level of every ATX heading, in order, skipping fenced code."""
    levels: list[int] = []
    fence: str | None = None
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if opened:
            marker = opened.group(1)
            fence = None if fence == marker else (fence or marker)
            continue
        if fence is None and (found := _HEADING.match(line)):
            levels.append(len(found.group(1)))
    return levels


def _outline(levels: list[int]) -> str:
    counts = {level: levels.count(level) for level in sorted(set(levels))}
    return ", ".join(f"h{level}: {n}" for level, n in counts.items()) or "no headings"


def check_pair(en: Path, zh: Path) -> list[str]:
    if not zh.exists():
        return [f"{en}: no Chinese counterpart {zh}"]
    en_levels = heading_levels(en.read_text(encoding="utf-8"))
    zh_levels = heading_levels(zh.read_text(encoding="utf-8"))
    if en_levels == zh_levels:
        return []
    return [f"{zh}: heading structure differs from {en} "
            f"({_outline(zh_levels)} vs {_outline(en_levels)}; "
            f"order {zh_levels} vs {en_levels})"]


def check_translations(docs: Path) -> list[str]:
    """Problems between docs/en and docs/zh, one message each."""
    en_dir, zh_dir = docs / "en", docs / "zh"
    if not en_dir.is_dir():
        return [f"{en_dir}: missing"]
    problems: list[str] = []
    for en in sorted(en_dir.rglob("*.md")):
        problems += check_pair(en, zh_dir / en.relative_to(en_dir))
    return problems


def check_reference() -> list[str]:
    import gen_config_reference

    return [f"{path}: out of date; run python scripts/gen_config_reference.py"
            for path in gen_config_reference.stale()]


def main(argv: list[str]) -> int:
    docs = Path(argv[0]) if argv else ROOT / "docs"
    problems = check_translations(docs)
    if not argv:
        problems += check_reference()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
