"""The raw config schema: strict pydantic models that mirror APISIX ai-proxy-multi.

Field names, defaults and limits follow the APISIX plugin so a route's JSON can be
pasted in unchanged. These models only describe and validate input; `runtime.py`
turns a validated tree into the frozen objects a request sees.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StringConstraints,
    field_validator,
)

# The cache models live in cache.py and the governance models in limits.py; named here
# so the schema module lists every model of the config.
from semproxy.config.cache import (  # noqa: F401
    AICache,
    BypassRule,
    CacheEmbedding,
    CacheKey,
    EmbeddingEndpoint,
    ExactLayer,
    Match,
    RedisIndex,
    SemanticLayer,
    VectorSearch,
)
from semproxy.config.limits import (  # noqa: F401
    AIRateLimiting,
    BudgetRouting,
    ConsumerGroup,
    ConsumerGroupPlugins,
    Governance,
    InstanceQuota,
    LedgerRedis,
    LimitSpec,
    Pricing,
    Rule,
    SentinelNode,
)
from semproxy.config.strict import Strict

# Instance names travel in response headers and metric labels: keep them to a
# token alphabet so no CR/LF or separator can ever be injected through config.
InstanceName = Annotated[
    str, StringConstraints(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._~-]+$")
]
Threshold = Annotated[float, Field(ge=-1.0, le=1.0)]


def _model_name(name: str) -> str:
    if not name.isprintable() or any(c.isspace() for c in name):
        raise ValueError("must be a model name: printable, without spaces")
    return name


# A model name a client may send (`meta-llama/Llama-3.1-8B`, `gpt-4o:latest`).
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=200),
                      AfterValidator(_model_name)]


def _header_value(value: str) -> str:
    # Checked after ${VAR} substitution: a variable holding a line break would
    # otherwise split the upstream request head and fail every call.
    if any(c in value for c in "\r\n\0"):
        raise ValueError("must not contain CR, LF or NUL (check the variable it comes from)")
    return value


HeaderValue = Annotated[str, AfterValidator(_header_value)]
HeaderMap = dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+$")], HeaderValue]


def _listen(value: object) -> str:
    hint = "must be HOST:PORT, e.g. 127.0.0.1:9080"
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"{hint} (a bare number gives no host: 127.0.0.1:{value}?)")
    if not isinstance(value, str):
        raise ValueError(hint)
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{hint} (for all interfaces: 0.0.0.0:{port or 9080})")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("port must be a number in 1-65535 (0 picks a free port)")
    return value


# BeforeValidator so that a YAML number (`listen: 9080`) gets the hint, not a type error.
Listen = Annotated[str, BeforeValidator(_listen)]
FallbackKind = Literal["instance_health_and_rate_limiting", "http_429", "http_5xx"]
# APISIX spells the health/rate-limit strategy "rate_limiting" inside a list.
FallbackListKind = Literal["rate_limiting", "instance_health_and_rate_limiting", "http_429",
                           "http_5xx"]



def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty or blank")
    return text


# An item-level check, so a blank example is reported at its own path (examples[3]).
Example = Annotated[str, AfterValidator(_not_blank)]


class Auth(Strict):
    header: HeaderMap = Field(default_factory=dict)
    query: HeaderMap = Field(default_factory=dict)


class Override(Strict):
    endpoint: str | None = None

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            check_url(value)
        return value


def _proxy_url(value: str | None) -> str | None:
    if value and not re.match(r"^https?://[^/\s]+", value):
        raise ValueError("must be an http:// or https:// proxy URL, or \"\" for no proxy")
    return value


# A proxy for upstream calls; absent: HTTPS_PROXY/HTTP_PROXY/NO_PROXY decide.
ProxyUrl = Annotated[str | None, AfterValidator(_proxy_url)]


class Tls(Strict):
    """PEM files for TLS to an upstream: a CA bundle to trust, a client certificate."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def check_url(value: str) -> None:
    """An http(s) URL with a host and a port in range; the message never quotes it."""
    if not re.match(r"^https?://[^/\s]+", value):
        raise ValueError("must be an http:// or https:// URL")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("has a port outside 1-65535 or a malformed host") from None
    if not parts.hostname:
        raise ValueError("has no host")
    if port == 0:
        raise ValueError("has a port outside 1-65535")


class HealthyChecks(Strict):
    interval: int = Field(default=1, ge=1)
    successes: int = Field(default=2, ge=1, le=254)
    http_statuses: list[Annotated[int, Field(ge=200, le=599)]] = Field(
        default_factory=lambda: [200, 302]
    )


class UnhealthyChecks(Strict):
    interval: int = Field(default=1, ge=1)
    http_failures: int = Field(default=5, ge=1, le=254)
    tcp_failures: int = Field(default=2, ge=1, le=254)
    timeouts: int = Field(default=3, ge=1, le=254)
    http_statuses: list[Annotated[int, Field(ge=200, le=599)]] = Field(
        default_factory=lambda: [429, 404, 500, 501, 502, 503, 504, 505]
    )


class ActiveChecks(Strict):
    type: Literal["http", "https", "tcp"] = "http"
    timeout: float = Field(default=1.0, gt=0)
    concurrency: int = Field(default=10, ge=1)
    http_path: str = "/"
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    https_verify_certificate: bool = True
    req_headers: list[HeaderValue] = Field(default_factory=list)
    healthy: HealthyChecks = Field(default_factory=HealthyChecks)
    unhealthy: UnhealthyChecks = Field(default_factory=UnhealthyChecks)


class PassiveChecks(Strict):
    """semproxy extension: trip an instance after `failures` errors within `window` s."""

    failures: int = Field(default=3, ge=1)
    window: float = Field(default=10.0, gt=0)
    cooldown: float = Field(default=10.0, gt=0)
    http_statuses: list[Annotated[int, Field(ge=400, le=599)]] = Field(
        default_factory=lambda: [429, 500, 502, 503, 504]
    )


class Checks(Strict):
    active: ActiveChecks | None = None
    passive: PassiveChecks | None = None


class Instance(Strict):
    name: InstanceName
    provider: str
    priority: int = 0
    weight: int = Field(ge=0)
    auth: Auth = Field(default_factory=Auth)
    options: dict[str, Any] = Field(default_factory=dict)
    override: Override = Field(default_factory=Override)
    checks: Checks | None = None
    proxy: ProxyUrl = None
    tls: Tls | None = None
    examples: list[Example] | None = Field(default=None, min_length=1, max_length=64)
    negative_examples: list[Example] | None = Field(default=None, min_length=1, max_length=64)
    threshold: Threshold | None = None
    catchall: bool = False
    pricing: Pricing | None = None
    # semproxy extension: more names a client may send for this instance's model.
    aliases: list[ModelName] = Field(default_factory=list, max_length=64)


class Conversation(Strict):
    """How `context: conversation` reads earlier user turns (defaults measured on CLINC150
    conversations, docs/en/semantic-routing.md)."""

    # User turns looked at, the newest included: 3 covers a topic and two follow-ups.
    max_turns: int = Field(default=3, ge=2, le=16)
    # A turn leads to another instance only if it scores that instance this much
    # higher than the instance the conversation is on...
    switch_margin: float = Field(default=0.05, ge=0.0, le=2.0)
    # ...and this much higher than the topic-free follow-ups semproxy ships
    # (semantic/followups.txt, scored as one more instance); a turn below that
    # is a follow-up and never leads, whatever it scores.
    followup_margin: float = Field(default=-0.01, ge=-2.0, le=2.0)
    # ...plus this much when the turn's wording points back at the conversation
    # ("that", "too", "instead", a leading "and": semantic/conversation.py); 0: off.
    cue_margin: float = Field(default=0.08, ge=0.0, le=2.0)
    # Longer user turns are pasted material (logs, files), not the user's words: skipped.
    max_turn_chars: int = Field(default=1000, ge=1, le=16384)


class Balancer(Strict):
    algorithm: Literal["roundrobin", "chash", "semantic"] = "roundrobin"
    hash_on: Literal["vars", "header", "cookie", "consumer", "vars_combinations"] = "vars"
    key: str | None = None
    # "auto": each instance without its own threshold gets one learned from its
    # examples and a shipped background set (balancer/auto_threshold.py).
    threshold: float | str = 0.0
    expose_scores: bool = False
    aggregation: Literal["max", "top_k_mean", "max_centroid", "max_local_centroid"] = "max"
    k: int = Field(default=3, ge=1, le=64)
    min_margin: float = Field(default=0.0, ge=0.0, le=2.0)
    # semproxy extension: subtract the mean example direction before comparing
    # (see semantic/scorer.py `centered`). Changes the scale of every score,
    # so thresholds chosen without it do not carry over.
    center: bool = False
    # semproxy extension: subtract this times the prompt's closeness to the shipped
    # background set from every score (semantic/auto_threshold.py), so everyday
    # talk must score higher to clear a threshold; 0 = off. Re-calibrate after.
    background_weight: float = Field(default=0.0, ge=0.0, le=2.0)
    # semproxy extension: `conversation` decides on the earlier user turns too.
    context: Literal["last_user", "conversation"] = "last_user"
    conversation: Conversation = Field(default_factory=Conversation)
    shadow: Shadow | None = None
    # semproxy extension: as a consumer's budget fills, weak matches of a dearer
    # instance move to cheaper ones (governance/tiers.py).
    budget_routing: BudgetRouting | None = None

    @field_validator("threshold")
    @classmethod
    def _number_or_auto(cls, value: float | str) -> float | str:
        # One check, so a bad value is one error at `...balancer.threshold` (a
        # union of two types would report one error per member).
        if isinstance(value, str) and value != "auto":
            raise ValueError('must be a number between -1 and 1, or "auto"')
        if isinstance(value, float | int) and not -1.0 <= value <= 1.0:
            raise ValueError("must be between -1 and 1")
        return value


class Embeddings(Strict):
    provider: str
    model: str | None = None
    auth: Auth = Field(default_factory=Auth)
    override: Override = Field(default_factory=Override)
    timeout: int = Field(default=3000, ge=1, le=60000)
    ssl_verify: bool = True
    proxy: ProxyUrl = None
    tls: Tls | None = None
    cache_size: int = Field(default=4096, ge=0)
    breaker_failures: int = Field(default=5, ge=1)
    breaker_cooldown: float = Field(default=10.0, gt=0)


class Shadow(Strict):
    """A routing table tried on live traffic without serving (`balancer.shadow`).

    On a semantic route every field is optional: absent ones are the route's own,
    so a shadow may change only thresholds. On a round-robin or chash route
    `examples` and `embeddings` make the table.
    """

    threshold: Threshold | None = None
    thresholds: dict[InstanceName, Threshold] = Field(default_factory=dict)
    examples: dict[InstanceName, Annotated[list[Example], Field(min_length=1, max_length=64)]] \
        | None = None
    catchall: InstanceName | None = None
    embeddings: Embeddings | None = None
    min_margin: float | None = Field(default=None, ge=0.0, le=2.0)


Balancer.model_rebuild()  # `Balancer.shadow` names this model, defined after it


class SemanticOpts(Strict):
    """The APISIX 3.18 spelling of the semantic settings; mapped onto the same runtime."""

    threshold: Threshold = 0.0
    debugging: bool = False
    fallback: InstanceName | None = None
    embeddings: Embeddings


class Logging(Strict):
    summaries: bool = False
    payloads: bool = False


class RouteSettings(Strict):
    """Connection, size and logging settings shared by `ai-proxy` and `ai-proxy-multi`."""

    timeout: int = Field(default=30000, ge=1)
    keepalive: bool = True
    keepalive_timeout: int = Field(default=60000, ge=1000)
    # APISIX's default is 30; unset, every idle connection is kept (up to
    # max_connections_per_origin), as semproxy always did: closing the surplus would
    # cost a new connection per request beyond 30 in flight.
    keepalive_pool: int | None = Field(default=None, ge=1)
    ssl_verify: bool = True
    attempt_timeout: int | None = Field(default=None, ge=1)
    max_resp_body_size: int = Field(default=32 * 1024 * 1024, ge=1)
    max_sse_event_size: int = Field(default=8 * 1024 * 1024, ge=1)
    max_connections_per_origin: int = Field(default=4096, ge=1)
    proxy: ProxyUrl = None
    max_req_body_size: int = Field(default=10 * 1024 * 1024, ge=1)
    logging: Logging = Field(default_factory=Logging)
    debug_headers: bool = False
    # semproxy extension: a `model` that no instance serves is a 404 (model_not_found)
    # instead of being served by the balancer's pick.
    strict_models: bool = False


class AIProxyMulti(RouteSettings):
    instances: list[Instance] = Field(min_length=1)
    balancer: Balancer = Field(default_factory=Balancer)
    embeddings: Embeddings | None = None
    semantic_opts: SemanticOpts | None = None
    fallback_strategy: FallbackKind | list[FallbackListKind] | None = None
    fallback_http_statuses: list[Annotated[int, Field(ge=400, le=599)]] = Field(
        default_factory=list
    )
    max_retries: int | None = Field(default=None, ge=0)
    retry_on_failure_within_ms: int | None = Field(default=None, ge=1)


class AIProxy(RouteSettings):
    """`ai-proxy`: one instance, its fields at the top level (APISIX shape)."""

    provider: str
    auth: Auth = Field(default_factory=Auth)
    options: dict[str, Any] = Field(default_factory=dict)
    override: Override = Field(default_factory=Override)
    pricing: Pricing | None = None


class KeyAuth(Strict):
    """APISIX key-auth on a route: the client presents a consumer's key."""

    header: str = "apikey"
    query: str = "apikey"


class Cors(Strict):
    """APISIX `cors`: which browser origins may call the route (fields, defaults and
    meanings as in APISIX; lists are comma-separated strings there too)."""

    allow_origins: HeaderValue = "*"
    allow_methods: HeaderValue = "*"
    allow_headers: HeaderValue = "*"
    expose_headers: HeaderValue = "*"
    max_age: int = Field(default=5, ge=-1)
    allow_credential: bool = False
    allow_origins_by_regex: list[str] | None = Field(default=None, min_length=1)


class Plugins(Strict):
    ai_proxy_multi: AIProxyMulti | None = Field(default=None, alias="ai-proxy-multi")
    ai_proxy: AIProxy | None = Field(default=None, alias="ai-proxy")
    key_auth: KeyAuth | None = Field(default=None, alias="key-auth")
    cors: Cors | None = None
    ai_rate_limiting: AIRateLimiting | None = Field(default=None, alias="ai-rate-limiting")
    ai_cache: AICache | None = Field(default=None, alias="ai-cache")


class ConsumerKey(Strict):
    key: Annotated[str, StringConstraints(min_length=8)]


class ConsumerPlugins(Strict):
    key_auth: ConsumerKey = Field(alias="key-auth")
    ai_rate_limiting: AIRateLimiting | None = Field(default=None, alias="ai-rate-limiting")


class Consumer(Strict):
    username: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,100}$")]
    plugins: ConsumerPlugins
    group_id: str | None = None


HttpMethod = Literal["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]


def _post_only() -> list[HttpMethod]:
    return ["POST"]


class Route(Strict):
    id: Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")]
    uri: Annotated[str, StringConstraints(pattern=r"^/")]
    methods: list[HttpMethod] = Field(default_factory=_post_only)
    plugins: Plugins
    # APISIX route metadata, accepted so a route from its Admin API pastes in
    # unchanged. `status: 0` disables the route (it answers 404, as in APISIX).
    status: Literal[0, 1] = 1
    name: str | None = None
    desc: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    create_time: int | None = None
    update_time: int | None = None


class Admin(Strict):
    listen: Listen = "127.0.0.1:9180"
    key: str | None = None
    allow_no_key_on_loopback: bool = False
    allow_env: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = \
        Field(default_factory=list)


class Root(Strict):
    listen: Listen = "127.0.0.1:9080"
    admin: Admin | None = None
    routes: list[Route] = Field(default_factory=list)
    consumers: list[Consumer] = Field(default_factory=list)
    consumer_groups: list[ConsumerGroup] = Field(default_factory=list)
    governance: Governance = Field(default_factory=Governance)
    shutdown_grace: float = Field(default=10.0, ge=0)
    client_body_timeout: float = Field(default=30.0, gt=0, le=3600)
    client_keepalive_timeout: float = Field(default=75.0, gt=0, le=3600)
