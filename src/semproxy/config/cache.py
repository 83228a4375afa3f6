"""The `ai-cache` plugin of a route: APISIX's fields and defaults, plus semproxy's own.

A route's `ai-cache` block from APISIX pastes in unchanged (`layers`, `exact.ttl`,
`semantic.*`, `cache_key.*`, `max_cache_body_size`, `cache_headers`, `fail_mode`,
`bypass_on`, `policy: redis` with the `redis_*` fields). Where semproxy differs it
is stricter, never looser, and says so:

- `cache_key.include_consumer` defaults to true: one consumer never gets another's
  answer unless the route says `include_consumer: false` (APISIX shares by default).
- `semantic` compares the vector semantic routing already made (or the in-process
  model's), so `semantic.embedding` and `semantic.vector_search` are accepted and
  not called; `vector_search.redis.index` names the Redis key prefix.
- `semantic.similarity_threshold` is a cosine on that model's vectors; absent, the
  model's threshold measured for at most 1% wrong hits applies (docs/en/cache.md),
  where APISIX's 0.95 assumes OpenAI's embeddings.
- `policy` defaults to an in-process store (`memory`) unless `redis_host` is given.

semproxy's own fields: `mode` (`shadow` serves from upstream and only records),
`shadow_threshold`, `max_temperature`, `deadline`, `memory_max_bytes`,
`semantic.near_miss`, `semantic.max_entries`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from semproxy.config.strict import Strict
from semproxy.embeddings import minilm
from semproxy.embeddings.factory import EmbeddingSpec
from semproxy.embeddings.registry import ACCURATE_MODEL, DEFAULT_LOCAL_MODEL

Layer = Literal["exact", "semantic"]


class ExactLayer(Strict):
    ttl: int = Field(default=3600, ge=1)


class CacheKey(Strict):
    share_across_routes: bool = False
    # None: semproxy's default, true (see the module docstring).
    include_consumer: bool | None = None
    include_vars: list[Annotated[str, StringConstraints(min_length=1, max_length=128)]] = \
        Field(default_factory=list)


class BypassRule(Strict):
    header: Annotated[str, StringConstraints(min_length=1)]
    equals: str


class Match(Strict):
    """Which messages the semantic layer compares (APISIX `semantic.match`)."""

    message_countback: int = Field(default=1, ge=1)
    ignore_system_prompts: bool = True
    ignore_assistant_prompts: bool = True
    ignore_tool_prompts: bool = True


class EmbeddingEndpoint(Strict):
    """APISIX's embedding service for the cache: accepted, never called by semproxy."""

    endpoint: str | None = None
    model: str | None = None
    api_key: str | None = None
    dimensions: int | None = Field(default=None, ge=1)
    ssl_verify: bool = True
    timeout: int = Field(default=5000, ge=1)


class CacheEmbedding(Strict):
    openai: EmbeddingEndpoint | None = None
    azure_openai: EmbeddingEndpoint | None = None


class RedisIndex(Strict):
    index: Annotated[str, StringConstraints(min_length=1, max_length=64,
                                            pattern=r"^[A-Za-z0-9._:-]+$")] = "ai-cache"


class VectorSearch(Strict):
    redis: RedisIndex = Field(default_factory=RedisIndex)


class SemanticLayer(Strict):
    similarity_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int = Field(default=1, ge=1)
    distance_metric: Literal["cosine"] = "cosine"
    ttl: int = Field(default=86400, ge=1)
    match: Match = Field(default_factory=Match)
    embedding: CacheEmbedding | None = None
    vector_search: VectorSearch = Field(default_factory=VectorSearch)
    # semproxy: refuse a semantic hit when the prompts differ in a number, name,
    # negation... (cache/nearmiss.py); off only to measure what it saves.
    near_miss: bool = True
    # semproxy: entries compared per partition (same route, instance, earlier turns,
    # parameters, consumer); the oldest leave first.
    max_entries: int = Field(default=256, ge=1, le=65536)


def _exact_only() -> list[Layer]:
    return ["exact"]


class AICache(Strict):
    layers: list[Layer] = Field(default_factory=lambda: _exact_only(), min_length=1)
    exact: ExactLayer = Field(default_factory=ExactLayer)
    semantic: SemanticLayer | None = None
    cache_key: CacheKey = Field(default_factory=CacheKey)
    max_cache_body_size: int = Field(default=1048576, ge=0)
    cache_headers: bool = True
    fail_mode: Literal["skip", "warn", "error"] = "skip"
    bypass_on: list[BypassRule] | None = Field(default=None, min_length=1)
    policy: Literal["redis", "memory"] | None = None
    redis_host: Annotated[str, StringConstraints(min_length=2)] | None = None
    redis_port: int = Field(default=6379, ge=1, le=65535)
    redis_username: Annotated[str, StringConstraints(min_length=1)] | None = None
    redis_password: str | None = None
    redis_database: int = Field(default=0, ge=0)
    redis_timeout: int = Field(default=1000, ge=1)
    redis_ssl: bool = False
    redis_ssl_verify: bool = False
    redis_keepalive_timeout: int = Field(default=10000, ge=1000)
    redis_keepalive_pool: int = Field(default=100, ge=1)
    # semproxy extensions
    mode: Literal["on", "shadow"] = "on"
    max_temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    # ms a cache read or write may take before it counts as a miss (fail-open).
    deadline: int = Field(default=50, ge=1, le=5000)
    memory_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    # mode: shadow: a would-be answer whose cosine with the fresh one (in-process model)
    # is below this counts as a wrong hit (cache/shadow.py says what it cannot see).
    shadow_threshold: float = Field(default=0.8, ge=0.0, le=1.0)

    @model_validator(mode="before")
    @classmethod
    def _semantic_defaults(cls, data: object) -> object:
        # `layers: [exact, semantic]` without a `semantic` block uses its defaults (APISIX
        # needs the block for its embedding service; semproxy needs none).
        if isinstance(data, dict) and "semantic" in (data.get("layers") or ()) \
                and data.get("semantic") is None:
            return {**data, "semantic": {}}
        return data

    @field_validator("layers")
    @classmethod
    def _exact_first(cls, value: list[Layer]) -> list[Layer]:
        if len(set(value)) != len(value):
            raise ValueError("must not repeat a layer")
        if "exact" not in value:
            raise ValueError('must contain "exact" (the semantic layer backs it, as in APISIX)')
        return value

    @model_validator(mode="after")
    def _policy_needs_host(self) -> AICache:
        if self.policy == "redis" and not self.redis_host:
            raise ValueError("redis_host is required when policy is redis")
        return self

    @property
    def store(self) -> Literal["redis", "memory"]:
        """Where entries live: `policy`, else Redis when a host is given."""
        return self.policy or ("redis" if self.redis_host else "memory")

    @property
    def semantic_on(self) -> bool:
        return "semantic" in self.layers


def vector_model(embeddings: EmbeddingSpec | None) -> str:
    """The model whose vectors a route's semantic layer compares, by the name its hit rule
    was measured under (cache/hitrule.py `DEFAULT_RULES`).

    A semantic route's routing vectors: wordllama's for `wordllama`, `fast` and
    `model: accurate` (the cascade's fast stage embeds every prompt, its strong stage
    only the ambiguous ones, so only the fast vector is there for every lookup),
    MiniLM's ("accurate", the name its rule was measured under) for
    `all-MiniLM-L6-v2`, and a remote model's under its fingerprint (no measured rule:
    `semantic.similarity_threshold` should be calibrated). Any other route: the
    in-process wordllama embeds the compared text.
    """
    if embeddings is None:
        return DEFAULT_LOCAL_MODEL
    if embeddings.target is not None:
        return embeddings.fingerprint
    return ACCURATE_MODEL if embeddings.model == minilm.MODEL_NAME else DEFAULT_LOCAL_MODEL


def check(conf: AICache, path: str, warn: Callable[[str], None]) -> None:
    """Load-time warnings for fields pasted from APISIX that semproxy reads differently."""
    if conf.fail_mode == "error":
        warn(f"{path}.fail_mode: semproxy always fails open (a cache fault is a miss, never "
             "an error); \"error\" is read as \"warn\"")
    semantic = conf.semantic
    if semantic is not None and semantic.embedding is not None:
        warn(f"{path}.semantic.embedding: not called; the semantic layer compares the "
             "routing vector (or the in-process model's)")
