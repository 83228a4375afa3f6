"""The raw schema of limits, budgets and prices (spend governance, governance/).

`AIRateLimiting` is the APISIX `ai-rate-limiting` plugin field by field (its
defaults included: `rejected_code` 503, `show_limit_quota_header` true,
`limit_strategy` total_tokens, `policy` local), so a route's plugin pastes in
unchanged; semproxy's own fields (`limits`, `default_max_tokens`,
`clamp_max_tokens`, `on_store_error`, ...) extend it. Cross-field checks (a
money budget needs prices, a policy needs its Redis fields) run when the
governance plan is compiled (governance/plan.py), each naming its field path.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from semproxy.config.strict import Strict

Money = Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)]
Positive = Annotated[int, Field(gt=0)]
# APISIX accepts a string for limit/time_window: a number, or a variable resolved per
# request. Variables are refused when the plan is compiled (a client could set them).
IntOrText = Positive | Annotated[str, StringConstraints(min_length=1, max_length=200)]
Span = int | Annotated[str, StringConstraints(min_length=1, max_length=20)]
StoreErrorPolicy = Literal["allow", "deny"]


class Pricing(Strict):
    """An instance's prices, per million tokens (`cached_input`: a prompt-cache hit;
    absent: the input price)."""

    input: Money
    output: Money
    cached_input: Money | None = None


class BudgetRouting(Strict):
    """`balancer.budget_routing` of a semantic route (governance/tiers.py): as a consumer's
    money budget crosses its tiers, a pick that is not the cheapest keeps a prompt only
    when its score clears its threshold by `keep_margin[tier - 1]` (the last value for
    further tiers); other prompts move to a cheaper instance by meaning. Cheaper: a
    lower blended price, `input_share` of input price plus the rest of output price."""

    keep_margin: list[Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)]] = Field(
        min_length=1, max_length=8)
    input_share: float = Field(default=0.75, ge=0, le=1, allow_inf_nan=False)


class InstanceQuota(Strict):
    """APISIX `instances[]`: one instance's own token quota (skipped when spent)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    limit: IntOrText
    time_window: IntOrText


class Rule(Strict):
    """APISIX `rules[]`: a quota per value of `key` (e.g. `$consumer_name`)."""

    count: IntOrText
    time_window: IntOrText
    key: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    header_prefix: str | None = None


class SentinelNode(Strict):
    host: Annotated[str, StringConstraints(min_length=2)]
    port: int = Field(ge=1, le=65535)


class LimitSpec(Strict):
    """A semproxy limit: one unit (exactly one of the unit fields) in one scope per window."""

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]{1,64}$")] | None = None
    scope: Literal["consumer", "consumer_group", "route", "instance", "end_user"] = "route"
    requests: Positive | None = None
    input_tokens: Positive | None = None
    output_tokens: Positive | None = None
    total_tokens: Positive | None = None
    concurrent: Positive | None = None
    money: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)] | None = None
    window: Span | None = None
    rolling: bool = False
    buckets: int | None = Field(default=None, ge=2, le=120)
    instance: str | None = None
    tiers: list[Annotated[float, Field(gt=0, lt=1)]] = Field(default_factory=list, max_length=8)
    on_store_error: StoreErrorPolicy | None = None


class RedisFields(Strict):
    """The Redis fields of APISIX's `redis`, `redis-cluster` and `redis-sentinel` policies."""

    redis_host: Annotated[str, StringConstraints(min_length=2)] | None = None
    redis_port: int = Field(default=6379, ge=1, le=65535)
    redis_username: Annotated[str, StringConstraints(min_length=1)] | None = None
    redis_password: str | None = None
    redis_database: int = Field(default=0, ge=0)
    redis_timeout: int = Field(default=1000, ge=1)
    redis_ssl: bool = False
    redis_ssl_verify: bool = False
    redis_keepalive_timeout: int = Field(default=10000, ge=1)
    redis_keepalive_pool: int = Field(default=100, ge=1)
    redis_cluster_nodes: list[Annotated[str, StringConstraints(min_length=2, max_length=100)]] \
        | None = Field(default=None, min_length=1)
    redis_cluster_name: str | None = None
    redis_cluster_ssl: bool = False
    redis_cluster_ssl_verify: bool = False
    redis_sentinels: list[SentinelNode] | None = Field(default=None, min_length=1)
    redis_master_name: Annotated[str, StringConstraints(min_length=1)] | None = None
    redis_role: Literal["master", "slave"] = "master"
    redis_connect_timeout: int = Field(default=1000, ge=1)
    redis_read_timeout: int = Field(default=1000, ge=1)
    sentinel_username: Annotated[str, StringConstraints(min_length=1)] | None = None
    sentinel_password: str | None = None
    sync_interval: float = -1


class AIRateLimiting(RedisFields):
    """`plugins.ai-rate-limiting` on a route, a consumer or a consumer group."""

    limit: IntOrText | None = None
    time_window: IntOrText | None = None
    show_limit_quota_header: bool = True
    limit_strategy: Literal["total_tokens", "prompt_tokens", "completion_tokens",
                            "expression"] = "total_tokens"
    cost_expr: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None
    instances: list[InstanceQuota] | None = Field(default=None, min_length=1)
    rejected_code: int = Field(default=503, ge=200, le=599)
    rejected_msg: Annotated[str, StringConstraints(min_length=1)] | None = None
    policy: Literal["local", "redis", "redis-cluster", "redis-sentinel"] = "local"
    allow_degradation: bool = False
    rules: list[Rule] | None = None
    # semproxy extensions
    limits: list[LimitSpec] = Field(default_factory=list, max_length=64)
    default_max_tokens: Positive | None = None
    clamp_max_tokens: bool = False
    clamp_min_tokens: Positive = 1
    on_store_error: StoreErrorPolicy | None = None  # absent: allow_degradation decides


class ConsumerGroupPlugins(Strict):
    ai_rate_limiting: AIRateLimiting | None = Field(default=None, alias="ai-rate-limiting")


class ConsumerGroup(Strict):
    """APISIX consumer group: consumers that name it in `group_id` share its limits."""

    id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    desc: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    plugins: ConsumerGroupPlugins = Field(default_factory=ConsumerGroupPlugins)


class LedgerRedis(Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=6379, ge=1, le=65535)
    username: str | None = None
    password: str | None = None
    database: int = Field(default=0, ge=0)
    timeout: int = Field(default=1000, ge=1)


class Governance(Strict):
    """Where budgets and spend live (`governance` at the top of the config).

    `local_counters`: where `policy: local` limits count. `host` (default): in the
    SQLite file, shared by the workers of `serve --workers N` as APISIX's workers
    share a node's counters; `process`: in each process's memory (one worker, or
    a read-only disk). `sync_interval`: seconds between a worker's lease syncs
    with each store (governance/lease.py). `image_tokens`: what admission holds
    for one image of a request's input. `unbounded_input_wait`: how long a request
    whose input has no proven bound (audio, files, state kept upstream) waits for
    its turn: such requests run one at a time against a limit that depends on input."""

    sqlite_path: Annotated[str, StringConstraints(min_length=1)] = "semproxy-spend.db"
    ledger: Literal["sqlite", "redis", "none"] = "sqlite"
    redis: LedgerRedis | None = None
    local_counters: Literal["host", "process"] = "host"
    reservation_lease: float = Field(default=900.0, ge=1, le=86400)
    sync_interval: float = Field(default=0.25, ge=0.01, le=10)
    image_tokens: int = Field(default=4096, ge=1, le=1_000_000)
    unbounded_input_wait: float = Field(default=2.0, ge=0, le=60)
    store_error_log_interval: float = Field(default=60.0, gt=0)
    store_retry_after: float = Field(default=1.0, ge=0, le=60)
