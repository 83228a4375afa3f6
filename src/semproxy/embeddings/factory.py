"""Build the embedder chain a route's `embeddings` block asks for.

local:  in-process model (wordllama, or all-MiniLM-L6-v2 when named); the cheap
        wordllama has no vector cache: the router's decision cache serves repeats
remote: cache -> circuit breaker -> provider HTTP call
Routes of one config version with the same embeddings block share one chain
(and so one prompt cache and one breaker).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from semproxy.embeddings import Embedder
from semproxy.embeddings.breaker import BreakerEmbedder, CircuitBreaker
from semproxy.embeddings.cache import CachedEmbedder
from semproxy.embeddings.registry import DEFAULT_LOCAL_MODEL, LOCAL_MODELS
from semproxy.embeddings.remote import RemoteEmbedder
from semproxy.embeddings.strong import StrongWorker
from semproxy.transport.base import Transport
from semproxy.transport.target import Target


@dataclass(frozen=True, slots=True)
class EmbeddingSpec:
    provider: str  # "local" or an HTTP provider name
    model: str | None  # for "local", always the name of a LOCAL_MODELS entry
    target: Target | None  # None for the in-process model
    cache_size: int
    breaker_failures: int
    breaker_cooldown_s: float

    @property
    def fingerprint(self) -> str:
        where = self.target.label if self.target else "in-process"
        return f"{self.provider}:{self.model or 'default'}@{where}"


# The in-process model with no settings of its own: what the response cache embeds a
# prompt with on a route that does not route on meaning, and compares answers with.
IN_PROCESS = EmbeddingSpec(provider="local", model=DEFAULT_LOCAL_MODEL, target=None,
                           cache_size=0, breaker_failures=1, breaker_cooldown_s=1.0)


class EmbedderPool:
    def __init__(self, transport: Transport,
                 on_cache_lookup: Callable[[bool], None] | None = None) -> None:
        self._transport = transport
        self._on_cache_lookup = on_cache_lookup  # metrics of the prompt-embedding caches
        self._chains: dict[str, Embedder] = {}
        self.breakers: dict[str, CircuitBreaker] = {}
        self.strong_workers: set[StrongWorker] = set()  # their `shed` counts are scraped

    def get(self, spec: EmbeddingSpec) -> Embedder:
        key = spec.fingerprint
        chain = self._chains.get(key)
        if chain is None:
            chain = self._build(spec)
            self._chains[key] = chain
        return chain

    def strong(self, spec: EmbeddingSpec, batch_work: bool = False) -> Embedder | None:
        """The second stage of a cascading local model (`model: accurate`), else None.

        `batch_work`: for evals and calibrations, which share the process's strong
        thread with live traffic and so wait behind every live prompt.
        """
        build = LOCAL_MODELS[spec.model or DEFAULT_LOCAL_MODEL].strong \
            if spec.target is None else None
        if build is None:
            return None
        embedder = build().for_batches() if batch_work else build()
        self.strong_workers.add(embedder.worker)
        return embedder

    def _build(self, spec: EmbeddingSpec) -> Embedder:
        inner: Embedder
        if spec.target is None:
            model = LOCAL_MODELS[spec.model or DEFAULT_LOCAL_MODEL]
            inner = model.build()
            # A vector-cache lookup costs about as much as a wordllama embedding;
            # repeated prompts are answered earlier, by the selector's decision cache.
            worth_caching = model.cached
        else:
            remote = RemoteEmbedder(spec.target, self._transport, spec.fingerprint)
            breaker = CircuitBreaker(spec.breaker_failures, spec.breaker_cooldown_s)
            self.breakers[spec.fingerprint] = breaker
            inner = BreakerEmbedder(remote, breaker)
            worth_caching = True
        if not worth_caching or spec.cache_size == 0:
            return inner
        return CachedEmbedder(inner, spec.cache_size, self._on_cache_lookup)
