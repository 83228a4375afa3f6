"""Build src/semproxy/cache/words.txt from Debian's wamerican word list.

    apt-get download wamerican && dpkg-deb -x wamerican_*.deb build/wamerican
    python scripts/gen_cache_words.py build/wamerican/usr/share/dict/american-english

The cache reads two differing words as a typo of one another when they are one
keystroke apart (cache/difference.py), unless both are English words. Only words
with such a neighbour can make both sides English, so only those are kept: every
lower-case word of three letters or more with another word one keystroke away that
starts with the same letter, is four letters or more, and is not its plural. The
header and the words follow; the notices go to words-copyright.txt (copy
/usr/share/doc/wamerican/copyright there).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/semproxy/cache/words.txt"


def one_apart(x: str, y: str) -> bool:
    """One letter replaced, dropped or added, or two neighbours swapped."""
    if x == y or abs(len(x) - len(y)) > 1:
        return False
    if len(x) == len(y):
        diff = [i for i in range(len(x)) if x[i] != y[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]])
    short, long = sorted((x, y), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def confusable(words: set[str]) -> set[str]:
    by_key: dict[str, set[str]] = defaultdict(set)
    for w in words:  # a word and each of its one-letter deletions (not the first letter)
        for key in (w, *(w[:i] + w[i + 1:] for i in range(1, len(w)))):
            by_key[key].add(w)
    kept: set[str] = set()
    for w in words:
        for key in (w, *(w[:i] + w[i + 1:] for i in range(1, len(w)))):
            for v in by_key[key]:
                short, long = sorted((v, w), key=len)
                if (v[0] == w[0] and len(long) >= 4 and one_apart(v, w)
                        and long not in (short + "s", short + "es")):
                    kept |= {v, w}
    return kept


def main() -> None:
    source = Path(sys.argv[1]).read_text(encoding="utf-8", errors="ignore").split()
    words = {w for w in source if re.fullmatch(r"[a-z]{3,}", w)}
    header = [line for line in OUT.read_text(encoding="utf-8").splitlines()
              if line.startswith("#")]
    OUT.write_text("\n".join([*header, *sorted(confusable(words))]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
