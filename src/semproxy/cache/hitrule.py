"""When a stored prompt's answer serves a new prompt: the semantic layer's decision.

Cosine alone cannot make it. Two typings of one question ("whats my credit scroe
thanks" / "what's my credit score") can score 0.6 on a small model, while a
question and its twin with one word swapped ("give me my credit limit" / "give me
my credit score") score as high. So a candidate is judged in three steps:

1. a near miss (cache/nearmiss.py: another number, name, negation, a swapped or
   added content word, another question word...) is refused whatever its cosine;
2. a prompt with the same words once courtesy, inflection and typos are set aside
   (cache/difference.py) needs only `same_words` of cosine: nothing is left that
   could ask something else, the cosine only guards against a difference the
   reading missed;
3. a rewording (the two share too little to be one sentence edited) needs
   `threshold`, the route's `semantic.similarity_threshold`: the cosine is the
   only evidence that it asks the same thing.

The defaults are what `semproxy calibrate --cache` chose on the tuning half of
tests/quality/data/cache for at most 1% wrong hits on its hard negatives, with the
extra condition that almost no pair of unrelated prompts (two CLINC150 prompts of
different intents) reaches `threshold`: a partition holds many unrelated prompts,
and each one that clears the rewording threshold is a chance to serve a wrong answer
(docs/en/cache.md, "How good it is").
"""

from __future__ import annotations

from dataclasses import dataclass

from semproxy.cache.difference import COURTESY, differ, prepare
from semproxy.cache.nearmiss import near_miss
from semproxy.cache.wording import Wording

SIMILARITY = "similarity"  # the refusal of a candidate below the cosine its kind needs
FALLBACK_THRESHOLD = 0.95  # APISIX's default, for a model nothing was measured on


@dataclass(frozen=True, slots=True)
class HitRule:
    """The cosines a candidate needs: `threshold` for a rewording, `same_words` for
    the same words; `near_miss` False compares cosines alone (to measure the check)."""

    threshold: float
    same_words: float
    near_miss: bool = True

    @property
    def floor(self) -> float:
        """The least cosine any candidate needs: candidates below it are not read."""
        return min(self.threshold, self.same_words) if self.near_miss else self.threshold


# Per embedding model, chosen on the tuning half (906 paraphrases, 897 hard negatives,
# 3,000 pairs of unrelated prompts): the lowest rewording threshold with at most 1%
# wrong hits and at most 0.1% of unrelated pairs hitting. wordllama at 0.53: 51.0% of
# paraphrases, 0.9% wrong hits, 3 of 3,000 unrelated; MiniLM at 0.56: 56.1%, 0.9%,
# 1 of 3,000. `same_words` was 0.3 on tune (0.2 to 0.5 changed nothing there); test2
# showed prompts typed in capitals scoring 0.1-0.3 against their lower-case twin on
# wordllama, so it is 0: two prompts of the same words are the same question whatever
# the model makes of their casing (a change made after test2 was scored).
DEFAULT_RULES = {
    "wordllama": HitRule(threshold=0.53, same_words=0.0),
    "fast": HitRule(threshold=0.53, same_words=0.0),
    "accurate": HitRule(threshold=0.56, same_words=0.0),
}


def rule_for(model: str, threshold: float | None, near_miss_check: bool = True) -> HitRule:
    """The rule of a route whose vectors come from `model`: its own threshold for
    rewordings when it sets one, the measured default otherwise. A prompt with the
    same words never needs more than a rewording does."""
    default = DEFAULT_RULES.get(model, HitRule(FALLBACK_THRESHOLD, FALLBACK_THRESHOLD))
    if threshold is None:
        return HitRule(default.threshold, default.same_words, near_miss_check)
    return HitRule(threshold, min(threshold, default.same_words), near_miss_check)


def judge(a: Wording, b: Wording, cosine: float, rule: HitRule) -> str | None:
    """None when `b`'s answer serves `a` (a hit), else why not: a near-miss rule's
    name or `SIMILARITY`."""
    if not rule.near_miss:
        return None if cosine >= rule.threshold else SIMILARITY
    if cosine < rule.threshold and not _may_share_words(a, b):
        return SIMILARITY  # below a rewording's threshold only the same words can serve
    if a.numbers != b.numbers:
        # The first near-miss rule, read before the costly part: `prepare` keeps every
        # number as it is, so `near_miss` would say the same after it.
        return "number"
    a, b, typos = prepare(a, b)
    difference = differ(a, b, typos)
    reason = near_miss(a, b, difference)
    if reason is not None:
        return reason
    needed = rule.same_words if difference.same_words else rule.threshold
    return None if cosine >= needed else SIMILARITY


def _may_share_words(a: Wording, b: Wording) -> bool:
    """A cheap bound: two prompts of the same words share at least half their distinct
    words before typos are mended (a typo in every other word is not a retyped prompt)."""
    wa, wb = set(a.words) - COURTESY, set(b.words) - COURTESY
    return len(wa & wb) >= 0.5 * max(len(wa), len(wb), 1)
