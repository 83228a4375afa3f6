"""Labelled multi-turn conversations, and how a route handles their follow-ups and switches.

One JSON object per line (tests/quality/data/conversations, built by
scripts/gen_conversations.py):

    {"messages": [...], "instance": "travel", "kind": "followup" | "switch",
     "turns": 2 | 3, "user_labels": ["banking", null, "travel"]}

`instance` is the domain the last turn belongs to, as `semproxy eval` reads
it; `user_labels` gives each user turn's own domain (null for a follow-up
with no topic of its own). The issue's targets count only conversations
whose labelled turns route correctly on their own: a follow-up cannot keep a
domain the first prompt never reached, so `alone_ok` marks those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from semproxy.quality.evaluate import evaluate
from semproxy.quality.labelled import LabelledDataError, LabelledPrompt, parse_item
from semproxy.quality.rate import Rate
from semproxy.semantic.router import SemanticRouter

KINDS = ("followup", "switch")


@dataclass(frozen=True, slots=True)
class Conversation:
    item: LabelledPrompt  # the text today's rule routes on (the last user turn) and the label
    kind: str
    turns: int
    labelled_turns: tuple[LabelledPrompt, ...]  # user turns with a domain of their own


def parse_conversation(line: bytes | str, where: str) -> Conversation:
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise LabelledDataError(f"{where}: not valid JSON: {exc.msg}") from exc
    item = parse_item(raw, where)
    kind, turns, labels = raw.get("kind"), raw.get("turns"), raw.get("user_labels")
    users = [m.get("content") for m in raw.get("messages") or () if m.get("role") == "user"]
    if kind not in KINDS or not isinstance(turns, int) or not isinstance(labels, list):
        raise LabelledDataError(f"{where}: needs kind (followup|switch), turns and user_labels")
    if len(labels) != len(users) or turns != len(users):
        raise LabelledDataError(f"{where}: user_labels and turns must match the user messages")
    own = tuple(LabelledPrompt(text, label) for text, label in zip(users, labels, strict=True)
                if label is not None and isinstance(text, str))
    return Conversation(item, kind, turns, own)


def load_conversations(path: str | Path) -> list[Conversation]:
    p = Path(path)
    lines = p.read_bytes().splitlines()
    return [parse_conversation(line, f"{p}:{n}") for n, line in enumerate(lines, start=1)
            if line.strip()]


@dataclass(frozen=True, slots=True)
class ConversationResult:
    conversation: Conversation
    right: bool  # the route's pick for the whole request is the labelled domain
    alone_ok: bool  # every labelled user turn, routed alone, reaches its own domain


async def route_conversations(router: SemanticRouter, convs: Sequence[Conversation]
                              ) -> list[ConversationResult]:
    """Route each conversation as the gateway routes the request, and each labelled turn
    alone (`semproxy eval` on the same router; no LLM is called)."""
    whole = await evaluate(router, [c.item for c in convs])
    turns = [t for c in convs for t in c.labelled_turns]
    alone = await evaluate(router, turns)
    ok = iter(e == d.pick for e, d in zip(alone.expected, alone.decisions, strict=True))
    return [ConversationResult(c, c.item.instance == d.pick,
                               all([next(ok) for _ in c.labelled_turns]))
            for c, d in zip(convs, whole.decisions, strict=True)]


def rates(results: Sequence[ConversationResult]) -> dict[tuple[str, str], Rate]:
    """Accuracy per (kind, turns as text or "all"), over all conversations and over those
    whose turns route correctly alone; keys ("followup", "2"), ("followup", "2 alone-ok")."""
    out: dict[tuple[str, str], Rate] = {}
    for kind in KINDS:
        for turns in ("2", "3", "all"):
            group = [r for r in results if r.conversation.kind == kind
                     and turns in ("all", str(r.conversation.turns))]
            out[(kind, turns)] = Rate(sum(r.right for r in group), len(group))
            kept = [r for r in group if r.alone_ok]
            out[(kind, f"{turns} alone-ok")] = Rate(sum(r.right for r in kept), len(kept))
    return out


def render_rates(table: dict[tuple[str, str], Rate]) -> str:
    lines = [f"{'kind':<9} {'turns':<13} accuracy [95% interval] n"]
    lines += [f"{kind:<9} {turns:<13} {rate.text()}" for (kind, turns), rate in table.items()]
    return "\n".join(lines)
