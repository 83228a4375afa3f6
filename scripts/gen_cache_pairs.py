"""Build the response-cache evaluation pairs from CLINC150 and hand-written material.

    python scripts/gen_cache_pairs.py --train-val ../shared/data/clinc150_train_val.json

Writes tests/quality/data/cache/tune.jsonl, test.jsonl and test2.jsonl: pairs of
prompts that deserve the same answer (`same: true`, paraphrases) and hard negatives
(`same: false`: same topic and wording, another answer). Each line: {"a", "b",
"same", "category", "kind", "source": "clinc" | "hand", "group"}; `kind` is crowd,
chat or edit for a paraphrase, negative otherwise. Tune and test are split by group
(a CLINC intent, a hand-written block) as split.json says, so no intent or block has
pairs in both; test2 is built from material neither holds (cache_pairs_test2.py).
Seeded per section: the same inputs give byte-identical files. How the pairs are
made and why: tests/quality/data/cache/README.md. CLINC150: Larson et al. 2019,
CC BY 3.0.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `scripts` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts import cache_pairs_clinc as clinc_pairs
from scripts.cache_pairs_edits import A, edit_pairs
from scripts.cache_pairs_test2 import (
    TEST2_INTENTS,
    chat_pairs,
    hand_blocks,
    hand_lines,
    test2_pairs,
)

OUT = Path(__file__).resolve().parents[1] / "tests/quality/data/cache"
EDITS_PER_INTENT = 3  # CLINC prompts of each intent given an edit (tune and test)


def tune_test_pairs(clinc: dict[str, list[str]], domains: dict[str, str], out: Path
                    ) -> list[dict[str, Any]]:
    """Every pair of tune and test, before the split."""
    para = hand_blocks(out / "paraphrases.txt", "p")
    return (clinc_pairs.paraphrases(clinc, _rng("crowd"))
            + chat_pairs(para)
            + edit_pairs(_edit_bases(clinc, para), A, _rng("edits"))
            + clinc_pairs.substitutions(clinc, _rng("substitution"))
            + clinc_pairs.other_slots(clinc, _rng("other_slot"))
            + clinc_pairs.negations(clinc, _rng("negation"))
            + clinc_pairs.other_intents(clinc, domains, _rng("other_intent"))
            + hand_lines(out / "negatives.txt", "n"))


def _rng(section: str) -> random.Random:
    return random.Random(f"{clinc_pairs.SEED}:{section}")


def _edit_bases(clinc: dict[str, list[str]], para: dict[str, list[str]]
                ) -> list[tuple[str, str, str]]:
    """Prompts of every intent test2 does not draw paraphrases from, and one of each
    hand-written group."""
    rng = _rng("edit-bases")
    bases = []
    for intent in sorted(clinc):
        if intent not in TEST2_INTENTS:
            bases += [(t, "clinc", intent)
                      for t in rng.sample(sorted(clinc[intent]), EDITS_PER_INTENT)]
    return bases + [(rng.choice(lines), "hand", group) for group, lines in sorted(para.items())]


def halves(pairs: list[dict[str, Any]], split: dict[str, str]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tune and test by split.json; a pair of two intents on both sides is in neither."""
    tune, test = [], []
    for row in pairs:
        sides = {split[group] for group in row["group"].split("+")}
        if len(sides) == 1:
            (tune if sides == {"tune"} else test).append(row)
    return tune, test


def load_split(path: Path) -> dict[str, str]:
    halves_ = json.loads(path.read_text(encoding="utf-8"))
    return {group: half for half in ("tune", "test") for group in halves_[half]}


def build(train_val: Path, out: Path = OUT) -> dict[str, list[dict[str, Any]]]:
    """Tune, test and test2 from the CLINC150 file and the hand-written files in `out`."""
    data = json.loads(train_val.read_text(encoding="utf-8"))
    clinc = clinc_pairs.load_clinc(train_val)
    domains = data["intent_to_domain"]
    split = load_split(out / "split.json")
    tune, test = halves(tune_test_pairs(clinc, domains, out), split)
    used = {text for row in tune + test for text in (row["a"], row["b"])}
    oos = sorted(set(data["oos"]["train"] + data["oos"]["val"]))
    return {"tune": tune, "test": test,
            "test2": test2_pairs(clinc, domains, oos, split, used, out)}


def lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-val", type=Path, required=True)
    args = parser.parse_args()
    for name, rows in build(args.train_val).items():
        (OUT / f"{name}.jsonl").write_text(lines(rows), encoding="utf-8")
        kinds = Counter(row["kind"] for row in rows)
        print(f"{name}: " + ", ".join(f"{kinds[k]} {k}" for k in sorted(kinds)))


if __name__ == "__main__":
    main()
