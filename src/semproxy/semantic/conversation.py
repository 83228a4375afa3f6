"""Which user turn a conversation is routed on (`balancer.context: conversation`).

Pure: each turn has been scored and decided on its own already (by the same
rule as any prompt); this module only chooses the turn whose decision serves.

The rule walks the turns oldest first and keeps the instance the conversation
is on (the *anchor* turn's decision) unless a newer turn clearly belongs
elsewhere: its own decision matched, it scores its own pick at least
`switch_margin` above the current instance, and its best score stands
`switch_lift` above its mean over all instances. Topic-free follow-ups ("make
it shorter", "why is that") fail the last test: they resemble every instance
about equally, so they neither clear a margin nor lift above their mean, and
the conversation stays where it was. Walking turn by turn (rather than mixing
all turns' scores) lets a real switch carry over to its own follow-ups.
Measured on CLINC150 conversations (docs/en/semantic-routing.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources

import numpy as np

from semproxy.config.schema import Conversation
from semproxy.semantic.decision import Decision

# A turn's own decision, its scores (router order) and its best cosine to FOLLOWUPS.
Turn = tuple[Decision, np.ndarray, float | None]

# Topic-free follow-ups written for semproxy ("make it shorter", "why is that"),
# embedded with each conversation route's examples: a turn that resembles them
# at least as much as its best instance is a follow-up, not a new topic.
FOLLOWUPS = tuple(line.strip() for line in resources.files("semproxy.semantic")
                  .joinpath("followups.txt").read_text(encoding="utf-8").splitlines()
                  if line.strip())


def switches(new: Turn, current: Turn, index: Mapping[str, int],
             settings: Conversation) -> bool:
    """Whether `new` moves the conversation away from the `current` anchor turn."""
    decision, scores, generic = new
    if not decision.matched:
        return False  # a turn that clears no threshold cannot lead anywhere
    if not current[0].matched:
        return True  # the conversation had no instance yet
    mine, theirs = index[decision.pick], index[current[0].pick]
    if mine == theirs:
        return True  # same instance: the newer turn's scores are the fresher view
    # Python floats: a handful of values, cheaper than numpy scalars.
    own = float(scores[mine])
    if generic is not None and own - generic < settings.followup_margin:
        return False  # it reads like a follow-up more than like its instance
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
