"""Which user turn a conversation is routed on (`balancer.context: conversation`).

Pure: each turn has been scored and decided on its own already (by the same
rule as any prompt); this module only chooses the turn whose decision serves.

The rule walks the turns oldest first and keeps the instance the conversation
is on (the *anchor* turn's decision). Only a turn that is confidently about a
topic of its own can become the anchor: its own decision matched and its pick
scores at least `followup_margin` above the shipped topic-free follow-ups
(scored as one more instance, with the route's aggregation). Any other turn
("make it shorter", "why is that", "and on monday?") inherits the anchor, so
a second or third follow-up stays anchored on the last real request. A
confident turn on another instance switches when it also scores its own pick
`switch_margin` above the current instance; its own follow-ups then stay with
it. A turn that carries a follow-up cue (`has_followup_cue`: "that", "too",
"instead", a leading "and"...) needs `cue_margin` more above the follow-ups to
lead. Measured on CLINC150 conversations (docs/en/semantic-routing.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib import resources

from semproxy.config.schema import Conversation
from semproxy.semantic.decision import Decision

# A turn's own decision, its scores (router order) and its score against FOLLOWUPS.
Turn = tuple[Decision, list[float], float | None]

# Topic-free follow-ups written for semproxy ("make it shorter", "why is that"),
# embedded with each conversation route's examples: a turn that scores them about
# as high as its best instance is a follow-up, not a new topic.
FOLLOWUPS = tuple(line.strip() for line in resources.files("semproxy.semantic")
                  .joinpath("followups.txt").read_text(encoding="utf-8").splitlines()
                  if line.strip())


# Words that point back at the conversation rather than bring a topic: anaphora
# ("that", "it", "them"), continuation ("too", "also", "again", "instead") and
# comparison ("more", "shorter", "other"). Averaged word vectors cannot see them: "could
# you do that for the car too" scores the car domain like a request about the car.
# Words and openings chosen by hand, the margin on CLINC150 tune conversations; CLINC
# prompts hold such words too ("cancel that"), which is why a cue only raises the bar.
CUE_WORDS = frozenset((
    "that", "this", "it", "its", "those", "these", "them", "they", "same", "too", "also",
    "again", "instead", "else", "other", "another", "either", "then", "more", "less",
    "shorter", "longer", "simpler"))
# Openings, as whole words: "ok, and for tomorrow" is one, "okra recipes" is not.
_OPENING = re.compile(r"(?:and|but|so|ok|okay|then|alright|hm+|wait|what about|how about"
                      r"|what if)\b")
_WORD = re.compile(r"[a-z']+")


def has_followup_cue(text: str) -> bool:
    """Whether a turn's wording points back at the conversation (see CUE_WORDS)."""
    lowered = text.lower().lstrip()
    return (_OPENING.match(lowered) is not None or "as well" in lowered
            or not CUE_WORDS.isdisjoint(_WORD.findall(lowered)))


def switches(new: Turn, current: Turn, index: Mapping[str, int],
             settings: Conversation) -> bool:
    """Whether `new` becomes the anchor in place of the `current` anchor turn."""
    decision, scores, generic = new
    if not decision.matched:
        return False  # a turn that clears no threshold cannot lead anywhere
    # Python floats: a handful of values, cheaper than numpy scalars.
    own = float(scores[index[decision.pick]])
    if generic is not None and own - generic < settings.followup_margin:
        return False  # it reads like a follow-up more than like its instance: inherits
    if not current[0].matched:
        return True  # the conversation had no instance yet
    theirs = index[current[0].pick]
    if index[decision.pick] == theirs:
        return True  # same instance: the newer request's scores are the fresher view
    return own - float(scores[theirs]) >= settings.switch_margin


def anchor(turns: Sequence[Turn], index: Mapping[str, int], settings: Conversation) -> int:
    """Index of the turn whose decision serves the conversation (oldest turn first)."""
    chosen = 0
    for i in range(1, len(turns)):
        if switches(turns[i], turns[chosen], index, settings):
            chosen = i
    return chosen


def weights(count: int, chosen: int) -> tuple[float, ...]:
    """How much each turn weighed in the decision, oldest first: all on the anchor."""
    return tuple(1.0 if i == chosen else 0.0 for i in range(count))
