"""What a limited request's answer says, per client protocol: pure data, rendered later.

- `refusal_answer`: status, error type/code and headers of a refused request.
  OpenAI (chat, responses): a rate limit is `rate_limit_exceeded` (type
  `requests` or `tokens`, as OpenAI sends), a spent money budget is
  `insufficient_quota`; Anthropic (messages): `rate_limit_error` for both at
  429. Every refusal carries `Retry-After` (whole seconds, at least 1) and, for
  OpenAI clients, `retry-after-ms`; a spent budget adds `x-should-retry: false`,
  which both official SDKs obey, so they do not retry into a month-long wait.
- `limit_headers`: the protocol's rate-limit headers from the readings of a
  reservation (OpenAI `x-ratelimit-*`, Anthropic `anthropic-ratelimit-*`), and
  APISIX's `X-AI-RateLimit-*` for ai-rate-limiting limits with
  `show_limit_quota_header`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from semproxy.governance.model import Unit
from semproxy.governance.reservation import Reading, Refusal

Headers = list[tuple[str, str]]
ANTHROPIC = "messages"
_ANTHROPIC_STATUS = {429: "rate_limit_error", 503: "overloaded_error", 529: "overloaded_error",
                     400: "invalid_request_error", 403: "permission_error"}
# Which OpenAI / Anthropic header family a unit is reported under.
_OPENAI = {Unit.REQUESTS: "requests", Unit.TOTAL_TOKENS: "tokens",
           Unit.INPUT_TOKENS: "tokens", Unit.OUTPUT_TOKENS: "tokens"}
_ANTHROPIC = {Unit.REQUESTS: "requests", Unit.TOTAL_TOKENS: "tokens",
              Unit.INPUT_TOKENS: "input-tokens", Unit.OUTPUT_TOKENS: "output-tokens"}


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """A refusal in the client's protocol: the error body's fields and the headers."""

    status: int
    message: str
    type: str
    code: str | None
    headers: Headers


def refusal_answer(refusal: Refusal, protocol: str) -> ErrorAnswer:
    wait = max(1, math.ceil(refusal.retry_after_s))
    headers: Headers = [("Retry-After", str(wait))]
    if refusal.reason == "quota":
        headers.append(("x-should-retry", "false"))
    if protocol == ANTHROPIC:
        kind = _ANTHROPIC_STATUS.get(refusal.status, "api_error")
        return ErrorAnswer(refusal.status, refusal.message, kind, None, headers)
    headers.append(("retry-after-ms", str(max(1, math.ceil(refusal.retry_after_s * 1000)))))
    if refusal.reason == "quota":
        kind, code = "insufficient_quota", "insufficient_quota"
    elif refusal.reason == "store":
        kind, code = "server_error", "service_unavailable"
    else:
        kind = "requests" if refusal.limit.unit is Unit.REQUESTS else "tokens"
        code = "rate_limit_exceeded"
    return ErrorAnswer(refusal.status, refusal.message, kind, code, headers)


def limit_headers(readings: Iterable[Reading], protocol: str, now: float) -> Headers:
    """The rate-limit headers of an answer (refused or not) from its readings."""
    readings = readings if isinstance(readings, list) else list(readings)
    anthropic = protocol == ANTHROPIC
    families = _ANTHROPIC if anthropic else _OPENAI
    tightest: dict[str, Reading] = {}
    apisix = False
    for reading in readings:
        limit = reading.limit
        if limit.apisix:
            apisix = apisix or limit.quota_headers
            continue
        family = families.get(limit.unit)
        if family is None:
            continue
        found = tightest.get(family)
        if found is None or reading.remaining < found.remaining:
            tightest[family] = reading
    headers = _apisix(readings) if apisix else []
    for family, r in sorted(tightest.items()) if len(tightest) > 1 else tightest.items():
        names = _NAMES[anthropic, family]
        reset = _rfc3339(now + r.reset_s) if anthropic else duration(r.reset_s)
        headers += [(names[0], str(r.limit.amount)), (names[1], str(r.remaining)),
                    (names[2], reset)]
    return headers


# (Anthropic?, family) -> the names of its limit, remaining and reset headers.
_NAMES = {**{(False, f): (f"x-ratelimit-limit-{f}", f"x-ratelimit-remaining-{f}",
                          f"x-ratelimit-reset-{f}") for f in set(_OPENAI.values())},
          **{(True, f): (f"anthropic-ratelimit-{f}-limit", f"anthropic-ratelimit-{f}-remaining",
                         f"anthropic-ratelimit-{f}-reset") for f in set(_ANTHROPIC.values())}}


def _apisix(readings: list[Reading]) -> Headers:
    """APISIX's names: X-AI-RateLimit-Limit-<instance> for `limit`/`instances[]`,
    X-AI-<header_prefix or rule number>-RateLimit-Limit for `rules[]`."""
    headers: Headers = []
    for r in readings:
        limit = r.limit
        if not (limit.apisix and limit.quota_headers):
            continue
        reset = f"{math.floor(r.reset_s * 100) / 100:g}"
        values = (str(limit.amount), str(r.remaining), reset)
        if limit.key is not None:
            names = [f"X-AI-{limit.label}-RateLimit-{w}" for w in ("Limit", "Remaining", "Reset")]
        else:
            names = [f"X-AI-RateLimit-{w}-{r.instance or limit.label}"
                     for w in ("Limit", "Remaining", "Reset")]
        headers += list(zip(names, values, strict=True))
    return headers


def duration(seconds: float) -> str:
    """OpenAI's reset format: 20ms, 1s, 6m0s, 1h2m3s."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    return _whole_duration(math.ceil(seconds))


@functools.lru_cache(maxsize=256)  # requests within one second share the same text
def _whole_duration(whole: int) -> str:
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _rfc3339(at: float) -> str:
    return datetime.fromtimestamp(math.ceil(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
