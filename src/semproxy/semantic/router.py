"""The semantic router of one route: the single place a prompt becomes a decision.

The gateway (one request at a time, failing open), `semproxy explain`, `eval`,
`calibrate` and the playground (batches, failing loudly) all hold a
`SemanticRouter` built by `open_router`, so they embed, score and decide the
same way. Nothing here knows about HTTP: the embedders are handed in
(`runtime/compile.py` builds them for the gateway and for `router_for`).
"""

from __future__ import annotations

import logging
import math
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from semproxy.config.semantic_spec import SemanticSpec
from semproxy.config.spec import RouteSpec
from semproxy.embeddings import Embedder
from semproxy.embeddings.cache import bounded_key
from semproxy.errors import BadRequestError, EmbeddingError
from semproxy.observability.logging import log_line
from semproxy.semantic import conversation
from semproxy.semantic.cascade import COMPLETE_STAGES, CascadeScorer, StrongState
from semproxy.semantic.decision import (
    MATCHED,
    NO_USER_TEXT,
    Decision,
    decide,
    decide_row,
    to_catchall,
)
from semproxy.semantic.query import RoutingInput, earlier_turns
from semproxy.semantic.scorer import PromptScorer, References, ScoredInstance

log = logging.getLogger("semproxy.routing")


class Routed(NamedTuple):
    """A decision and whether the decision cache answered it.

    `cached` travels with the result (rather than being read off a shared
    counter) so a concurrent request can never be credited with another's hit.
    It is None when the cache was not consulted (no user text, or no cache).
    """

    decision: Decision
    cached: bool | None


class SemanticRouter:
    """Embeds, scores and decides for one route of one config version."""

    def __init__(self, route_id: str, spec: SemanticSpec, scorer: PromptScorer,
                 cascade: CascadeScorer | None = None) -> None:
        self.route_id = route_id
        self.spec = spec
        self.scorer = scorer
        # model: accurate: `scorer` is the fast stage, the cascade adds the strong one.
        self.cascade = cascade
        self.stages: Counter[str] = Counter()  # which stage decided (cascade only)
        # A repeated prompt gets the decision it got before, as long as the
        # reference vectors it was scored against are still the current ones:
        # no embedding, no matrix product. Only decisions made the way the route
        # asks are kept: failures, and under `model: accurate` a close call the
        # strong stage could not take (queue full, failed, loading), are decided
        # again on the next request.
        # Each entry keeps the turn's score row too: a conversation reuses the
        # earlier turns' scores from here instead of embedding them again.
        # Long prompts are keyed by a digest (`bounded_key`), so an entry costs
        # about the same whatever the prompt's length.
        self._decisions: OrderedDict[str | bytes, tuple[References, conversation.Turn]] = \
            OrderedDict()
        self._max_decisions = spec.embeddings.cache_size
        self._index = {name: i for i, name in enumerate(self.names)}

    @property
    def names(self) -> tuple[str, ...]:
        """Instances with examples, in config order (the catchall may be one of them)."""
        return self.scorer.names

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The thresholds in force (of the fast stage under `model: accurate`)."""
        return self.scorer.thresholds

    async def references(self) -> References:
        """The reference vectors, built now; under `model: accurate` the strong stage's
        too, so a gateway that waits for this serves no prompt without the stage it
        needs (a strong stage that fails to load is reported by `strong_state`)."""
        if self.cascade is not None:
            return await self.cascade.load()
        return await self.scorer.references()

    @property
    def strong_state(self) -> StrongState | None:
        """`model: accurate`: whether the strong stage can decide; None without one."""
        return None if self.cascade is None else self.cascade.strong_state

    def rule(self, scores: np.ndarray | list[float],
               negative: np.ndarray | list[float] | None = None,
               thresholds: Sequence[float] | None = None) -> Decision:
        """The route's rule on one row of scores (its own thresholds unless others are tried)."""
        return decide(self.names, scores, self.thresholds if thresholds is None else thresholds,
                      self.spec.catchall, min_margin=self.spec.min_margin, negative=negative)

    def query(self, messages: Sequence[Any], last: RoutingInput) -> RoutingInput:
        """The input of a chat request: `last`, what its protocol routes on (the last
        user turn), and, on a route with `context: conversation`, the user turns
        before it that are worth reading."""
        settings = self.spec.conversation
        if settings is None:
            return last
        return RoutingInput(last.text, earlier_turns(messages, settings.max_turns,
                                                     settings.max_turn_chars))

    def narrowed(self, query: RoutingInput) -> RoutingInput:
        """`query` (earlier turns unfiltered, e.g. from a labelled file) as `query` would
        have built it from the same conversation."""
        settings = self.spec.conversation
        if settings is None:
            return RoutingInput(query.text)
        kept = [t for t in query.earlier if t and len(t) <= settings.max_turn_chars]
        return RoutingInput(query.text, tuple(kept[-(settings.max_turns - 1):]))

    def _turns(self, query: RoutingInput) -> list[str]:
        """The turns a conversation is decided on; a pasted last turn does not count."""
        settings = self.spec.conversation
        if settings is None or not query.earlier:
            return [query.text]
        last = [query.text] if query.text and len(query.text) <= settings.max_turn_chars else []
        return [*query.earlier, *last]

    # -- one request (the gateway): cached, fail-open ---------------------------
    async def route(self, query: RoutingInput) -> Routed:
        """The decision for one request; any failure serves the catchall."""
        if self.cascade is None and (not query.earlier or self.spec.conversation is None):
            # One turn (what `_turns` gives here) on a one-stage route: the common request.
            if not query.text:
                return Routed(to_catchall(self.spec.catchall, NO_USER_TEXT), None)
            return await self._route_one(query.text)
        turns = self._turns(query)
        if not turns or not turns[-1]:
            return Routed(to_catchall(self.spec.catchall, NO_USER_TEXT), None)
        remembered = [self._remembered(t) for t in turns]
        missing = [t for t, seen in zip(turns, remembered, strict=True) if seen is None]
        try:
            fresh = await self._score(missing) if missing else {}
        except Exception as exc:  # fail-open: routing must never turn a request into a 5xx
            return self._failed(exc)
        scored = [seen or fresh[t] for t, seen in zip(turns, remembered, strict=True)]
        decision = self._conversation(scored)
        if decision.ranking and decision.reason != MATCHED and log.isEnabledFor(logging.WARNING):
            self._warn_fallback(decision)
        return Routed(decision, not missing if self._max_decisions > 0 else None)

    async def _route_one(self, text: str) -> Routed:
        """`route` of one turn on a one-stage route, the common request, in fewer steps:
        the same decision cache, decision (the values a batch of one gets), fail-open
        handling and warning (tests/semantic/test_one_prompt.py)."""
        turn = self._remembered(text)
        cached = turn is not None
        if turn is None:
            try:
                refs, scores, negative, generic = await self.scorer.score_one(text)
                decision = decide_row(refs.names, scores, refs.thresholds, self.spec.catchall,
                                      self.spec.min_margin, negative)
                near = None if generic is None else self._near(text, decision, refs, generic)
            except Exception as exc:  # fail-open, as in `route`
                return self._failed(exc)
            turn = (decision, scores, near)
            self._remember(text, refs, turn)
        decision = turn[0]
        if decision.ranking and decision.reason != MATCHED and log.isEnabledFor(logging.WARNING):
            self._warn_fallback(decision)
        return Routed(decision, cached if self._max_decisions > 0 else None)

    def _failed(self, exc: Exception) -> Routed:
        """The catchall, when scoring failed; logged."""
        if isinstance(exc, EmbeddingError):
            log.warning("semantic routing: %s on route %s, serving %s", exc, self.route_id,
                        self.spec.catchall)
            return Routed(to_catchall(self.spec.catchall, exc.reason), None)
        log.warning("semantic routing: unexpected %s on route %s, serving %s",
                    type(exc).__name__, self.route_id, self.spec.catchall)
        return Routed(to_catchall(self.spec.catchall, "embedding_error"), None)

    @staticmethod
    def _warn_fallback(decision: Decision) -> None:
        log_line(log, logging.WARNING, "semantic routing: no instance cleared threshold "
                 f"(scores: {decision.scores_text}), falling back")

    def _conversation(self, scored: Sequence[conversation.Turn]) -> Decision:
        if len(scored) == 1 or self.spec.conversation is None:
            return scored[-1][0]
        chosen = conversation.anchor(scored, self._index, self.spec.conversation)
        return replace(scored[chosen][0], context=conversation.weights(len(scored), chosen))

    def _remembered(self, text: str) -> conversation.Turn | None:
        key = bounded_key(text)
        entry = self._decisions.get(key)
        if entry is None or entry[0] is not self.scorer.current:
            return None
        self._decisions.move_to_end(key)
        return entry[1]

    def _remember(self, text: str, refs: References, turn: conversation.Turn) -> None:
        if self._max_decisions <= 0:
            return
        self._decisions[bounded_key(text)] = (refs, turn)
        if len(self._decisions) > self._max_decisions:
            self._decisions.popitem(last=False)

    async def _score(self, texts: Sequence[str]) -> dict[str, conversation.Turn]:
        """Each text scored and decided on its own, with one embedding call; remembered
        when the stage it needed decided it (not shed, failed or still loading)."""
        scores, negative, generic, refs, complete = await self._score_turns(texts)
        out = self._own_turns(texts, scores, negative, generic, refs)
        # Remembered against the fast stage's references, which both stages' live as long as.
        current = self.scorer.current
        if current is not None:
            for text, kept in zip(texts, complete, strict=True):
                if kept:
                    self._remember(text, current, out[text])
        return out

    async def _score_turns(self, texts: Sequence[str]) -> tuple[
            np.ndarray, np.ndarray | None, np.ndarray | None, list[References], list[bool]]:
        """Scores, negatives, follow-up scores, each row's references (those of the
        stage that scored it: thresholds and cosine scales differ between models) and
        whether each row was scored by the stage it needed."""
        if self.cascade is None:
            refs, scores, negative, generic = await self.scorer.score_turns(texts)
            return scores, negative, generic, [refs] * len(texts), [True] * len(texts)
        if len(texts) == 1:  # one request's turn: the cascade's bounded, shedding path
            (refs, scores, negative, generic), stage = await self.cascade.score_turn(texts[0])
            self.stages[stage] += 1
            return (scores, negative, generic, [self.cascade.refs_for(stage) or refs],
                    [stage in COMPLETE_STAGES])
        (refs, scores, negative, generic), stages = await self.cascade.score_turns(texts)
        return (scores, negative, generic, [self.cascade.refs_for(s) or refs for s in stages],
                [s in COMPLETE_STAGES for s in stages])

    def _own_turns(self, texts: Sequence[str], scores: np.ndarray, negative: np.ndarray | None,
                   generic: np.ndarray | None, refs: Sequence[References]
                   ) -> dict[str, conversation.Turn]:
        """Each text's own decision (with the thresholds of the stage that scored it), its
        scores and its closeness to the follow-ups (see `_near`)."""
        out: dict[str, conversation.Turn] = {}
        for row, text in enumerate(texts):
            values = scores[row].tolist()
            decision = self.rule(values, None if negative is None else negative[row],
                                   refs[row].thresholds)
            near = None if generic is None else float(generic[row])
            out[text] = (decision, values, self._near(text, decision, refs[row], near))
        return out

    def _near(self, text: str, decision: Decision, refs: References,
              generic: float | None) -> float | None:
        """A turn's closeness to the follow-ups, plus its pick's `followup_bias` and, when
        its wording carries a follow-up cue, the route's `cue_margin`."""
        # NaN: the stage that scored this row has no follow-ups; the turn is unchecked.
        if generic is None or math.isnan(generic):
            return None
        near = generic
        bias = refs.followup_bias
        slot = self._index.get(decision.pick)
        if bias is not None and slot is not None:
            near += float(bias[slot])
        settings = self.spec.conversation
        if settings is not None and settings.cue_margin and conversation.has_followup_cue(text):
            near += settings.cue_margin
        return near

    # -- many prompts (eval, calibrate, playground): batched, errors raised -------
    async def score_many(self, texts: Sequence[str]
                         ) -> tuple[np.ndarray, np.ndarray | None]:
        """`(n, n_instances)` scores (and negatives) of many texts: one embedding call.

        Under `model: accurate` the ambiguous rows hold the strong model's scores.
        """
        scores, negative, _, _, _ = await self._score_turns(texts)
        return scores, negative

    async def route_many(self, queries: Sequence[RoutingInput]) -> list[Decision]:
        """`route` for many inputs with one embedding call, without the cache.

        Every distinct turn is embedded once. It does not fail open: an
        embedding error is raised, because figures computed from fallbacks
        would be meaningless.
        """
        turns = [self._turns(q) for q in queries]
        texts = list(dict.fromkeys(t for ts in turns for t in ts if t))
        own = self._own_turns(texts, *(await self._score_turns(texts))[:4]) if texts else {}
        return [self._conversation([own[t] for t in ts]) if ts and ts[-1]
                else to_catchall(self.spec.catchall, NO_USER_TEXT) for ts in turns]


def strong_readiness(routers: Iterable[SemanticRouter]) -> StrongState | None:
    """The least ready strong stage of `routers`: "loading" before "failed" before
    "ready"; None when no route uses `model: accurate`."""
    states = {r.strong_state for r in routers}
    return next((s for s in ("loading", "failed", "ready") if s in states), None)


def open_router(route: RouteSpec, embedder: Embedder, strong: Embedder | None = None
                ) -> SemanticRouter:
    """The router of a semantic route: the one way every caller builds it.

    `strong` is the second stage of `model: accurate` (EmbedderPool.strong).
    """
    spec = route.semantic
    if spec is None:
        raise BadRequestError(f"route {route.id!r} does not use semantic balancing")
    instances = [ScoredInstance(i.name, i.examples, i.negative_examples,
                                i.threshold if i.threshold is not None
                                else None if spec.auto_threshold else spec.threshold)
                 for i in route.instances if i.examples]
    followups = conversation.FOLLOWUPS if spec.conversation is not None else ()
    fast = PromptScorer(instances, embedder, spec.aggregation, spec.k, spec.center, followups,
                        spec.background_weight)
    # The strong stage never centres: centring corrects the common component of
    # averaged word vectors, and measured worse on MiniLM's vectors. Nor does it take
    # background_weight, which was measured on the fast model's scores only. It embeds
    # the follow-ups too, so a turn it decides is checked against its own view of them.
    cascade = None if strong is None else CascadeScorer(
        fast, PromptScorer(instances, strong, spec.aggregation, spec.k, followups=followups))
    return SemanticRouter(route.id, spec, fast, cascade)

