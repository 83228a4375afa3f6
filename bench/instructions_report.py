"""What the instruction mode measures (servers, scenarios) and how it reports it.

Pure: no processes here, so the report can be checked without valgrind
(tests/docs/test_bench_instructions.py). bench/instructions.py does the measuring.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Server:
    """One process set-up: `kind` of `run.gateway_config` (None: bench/relay.py)."""

    key: str
    kind: str | None
    flags: tuple[str, ...] = ()  # extra `semproxy serve` options
    needs_accurate: bool = False  # `model: accurate` (the accurate extra and MiniLM weights)
    needs_redis: bool = False  # a redis-server on loopback (started by the harness)


@dataclass(frozen=True)
class Scenario:
    """A load on a server: post.lua's prompt mode and client protocol (shape).

    `share` scales `--requests` (a slow scenario may count fewer). `counted_at` says
    where n comes from: `upstream` (the mock's log, the default) or `client` (its 2xx
    answers), for a scenario whose requests do not all reach the upstream. `pending`:
    a slot for a feature that does not exist yet, reported but not run.
    """

    key: str
    label: str
    server: str
    prompts: str = "fixed"
    shape: str = "chat"
    share: float = 1.0
    counted_at: str = "upstream"
    pending: str = ""


SERVERS = {s.key: s for s in (
    Server("relay", None),
    Server("gw-rr", "rr"),
    Server("gw-rr-nolog", "rr", ("--no-access-log",)),
    Server("gw-local", "local"),
    Server("gw-local-nolog", "local", ("--no-access-log",)),
    Server("gw-accurate", "accurate", needs_accurate=True),
    Server("gw-rr-limits", "rr-limits"),
    Server("gw-rr-limits-redis", "rr-limits-redis", needs_redis=True),
    Server("gw-rr-cache", "rr-cache"),
    Server("gw-rr-cache-exact", "rr-cache-exact"),
    Server("gw-local-cache", "local-cache"),
)}

SCENARIOS = (
    Scenario("relay", "minimal aiohttp relay (reference)", "relay"),
    Scenario("rr", "round-robin x3", "gw-rr"),
    Scenario("rr-msg", "round-robin x3, Anthropic Messages client", "gw-rr", shape="messages"),
    Scenario("rr-resp", "round-robin x3, OpenAI Responses client", "gw-rr",
             shape="responses"),
    Scenario("rr-nolog", "round-robin x3, `--no-access-log`", "gw-rr-nolog"),
    Scenario("sem-miss", "semantic, local model, a new prompt per request", "gw-local",
             "varied"),
    Scenario("sem-hit", "semantic, local model, 8 repeated prompts", "gw-local", "small"),
    Scenario("sem-miss-nolog", "semantic, new prompts, `--no-access-log`", "gw-local-nolog",
             "varied"),
    # The strong model re-scores the ambiguous prompts: ~25M instructions a request, so
    # half the requests give as steady a figure.
    Scenario("sem-acc-miss", "semantic, `model: accurate`, a new prompt per request",
             "gw-accurate", "varied", share=0.5),
    Scenario("sem-acc-hit", "semantic, `model: accurate`, 8 repeated prompts", "gw-accurate",
             "small"),
    # Spend governance (issue 25): a tokens-per-minute limit and a money budget on the
    # round-robin route, in the embedded stores (SQLite) and on Redis.
    Scenario("rr-limits", "round-robin x3 with a token limit and a money budget",
             "gw-rr-limits"),
    Scenario("rr-limits-redis", "round-robin x3, the same limits on Redis (loopback)",
             "gw-rr-limits-redis"),
    # Slots for features that are not built yet. To fill one: add its set-up as a kind
    # of run.gateway_config and a Server above, point `server` at it and drop `pending`.
    # A response-cache hit never reaches the upstream: count that one at the client.
    Scenario("rr-cache", "round-robin x3 with the response cache, repeated prompts",
             "gw-rr-cache", "small", counted_at="client"),
    Scenario("rr-cache-miss", "round-robin x3 with the response cache, a new prompt per "
             "request", "gw-rr-cache", "varied"),
    Scenario("rr-cache-exact-miss", "round-robin x3 with the exact layer only, a new prompt "
             "per request", "gw-rr-cache-exact", "varied"),
    Scenario("rr-varied", "round-robin x3, a new prompt per request", "gw-rr", "varied"),
    # The cache on a semantic route: its semantic layer compares the routing vector, so
    # a miss embeds nothing more than sem-miss does.
    Scenario("sem-cache-miss", "semantic, local model, with the response cache (both layers), "
             "a new prompt per request", "gw-local-cache", "varied"),
)

# The response cache's targets (issue 26): scenario, the one it is compared with, and the
# least ratio of req/s; in instructions per request the miss must cost at most 1/0.9 of
# its reference, and a hit is compared with the relay.
CACHE_TARGETS = (("rr-cache", "relay", 1.5), ("rr-cache-miss", "rr-varied", 0.9),
                 ("rr-cache-exact-miss", "rr-varied", 0.9), ("sem-cache-miss", "sem-miss", 0.9))


@dataclass(frozen=True)
class Measured:
    """One window: instructions counted, requests that reached the upstream, 2xx answers."""

    instructions: int
    upstream: int
    answered: int
    counted_at: str = "upstream"

    @property
    def n(self) -> int:
        return self.answered if self.counted_at == "client" else self.upstream

    @property
    def per_request(self) -> float:
        return self.instructions / self.n if self.n else math.nan


Results = dict[str, list["Measured | str"]]  # scenario key -> per run: figures or why none


def spread(values: list[float]) -> float:
    """(max - min) / min of the finite values; NaN below two of them."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2 or min(finite) <= 0:
        return math.nan
    return (max(finite) - min(finite)) / min(finite)


def ratios(mine: list[Measured | str], ref: list[Measured | str]) -> list[float]:
    """Per run: this scenario's instructions per request over the reference's."""
    return [a.per_request / b.per_request
            if isinstance(a, Measured) and isinstance(b, Measured) and b.per_request
            else math.nan for a, b in zip(mine, ref, strict=False)]


def median_ratio(mine: list[float], ref: list[float]) -> float:
    """Median of per-round ratios (rounds where both have a figure)."""
    vals = [a / b for a, b in zip(mine, ref, strict=False)
            if math.isfinite(a) and math.isfinite(b) and b]
    return statistics.median(vals) if vals else math.nan


def _join(values: list[str]) -> str:
    return " / ".join(values) if values else "-"


def kilo(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value / 1000:,.1f}k"


def num(value: float, digits: int = 2) -> str:
    return "-" if not math.isfinite(value) else f"{value:,.{digits}f}"


def pct(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{100 * value:.1f}%"


def row(s: Scenario, results: Results, rps: dict[str, list[float]], skipped: dict[str, str]
        ) -> str:
    if s.pending or s.server in skipped:
        why = s.pending or f"skipped: {skipped[s.server]}"
        return f"| {s.label} | {why} ||||||"
    runs = results.get(s.key, [])
    done = [m for m in runs if isinstance(m, Measured)]
    if not done:
        why = next((m for m in runs if isinstance(m, str)), "not measured")
        return f"| {s.label} | skipped: {why} ||||||"
    per = [m.per_request if isinstance(m, Measured) else math.nan for m in runs]
    x_relay = ratios(runs, results.get("relay", []))
    mine, ref = rps.get(s.key, []), rps.get("relay", [])
    finite = [v for v in mine if math.isfinite(v)]
    return (f"| {s.label} | {_join([kilo(v) for v in per])} | {pct(spread(per))} "
            f"| {_join([str(m.n) if isinstance(m, Measured) else '-' for m in runs])} "
            f"| {_join([num(v) for v in x_relay])} "
            f"| {num(statistics.median(finite), 0) if finite else '-'} "
            f"| {num(median_ratio(mine, ref))} |")


def comparisons(results: Results) -> list[str]:
    """Protocols against Chat Completions, and what `--no-access-log` saves."""
    lines = []
    for key, name in (("rr-msg", "Anthropic Messages"), ("rr-resp", "OpenAI Responses")):
        per_run = ratios(results.get(key, []), results.get("rr", []))
        if any(math.isfinite(v) for v in per_run):
            lines.append(f"- {name} x Chat Completions on the same route (instructions per "
                         f"request, per run): {_join([num(v) for v in per_run])}")
    for key, name in (("rr-limits", "a token limit and a money budget (embedded)"),
                      ("rr-limits-redis", "the same limits on Redis")):
        per_run = ratios(results.get(key, []), results.get("rr", []))
        added = [a.per_request - b.per_request
                 for a, b in zip(results.get(key, []), results.get("rr", []), strict=False)
                 if isinstance(a, Measured) and isinstance(b, Measured)]
        if added:
            lines.append(f"- {name} on the round-robin route, against the same route "
                         f"without (instructions per request, per run): "
                         f"{_join([num(v) for v in per_run])}x, "
                         f"{_join([kilo(v) for v in added])} added")
    lines += cache_comparisons(results)
    for off, on in (("rr-nolog", "rr"), ("sem-miss-nolog", "sem-miss")):
        saved = [b.per_request - a.per_request
                 for a, b in zip(results.get(off, []), results.get(on, []), strict=False)
                 if isinstance(a, Measured) and isinstance(b, Measured)]
        if saved:
            lines.append(f"- `--no-access-log` on `{on}` saves, per run: "
                         f"{_join([kilo(v) for v in saved])} instructions per request")
    return lines


def cache_comparisons(results: Results) -> list[str]:
    """Each cache scenario against its reference, per run, as the inverse ratio of
    instructions per request (what req/s would be if instructions alone set it)."""
    lines = []
    for key, ref, target in CACHE_TARGETS:
        per_run = ratios(results.get(ref, []), results.get(key, []))
        if any(math.isfinite(v) for v in per_run):
            met = all(math.isfinite(v) and v >= target for v in per_run)
            lines.append(f"- `{key}` against `{ref}` (its instructions per request over "
                         f"`{key}`'s, per run): {_join([num(v) for v in per_run])}; target "
                         f">= {target}: {'met' if met else 'not met'}")
    return lines


def warnings(results: Results) -> list[str]:
    """Windows whose upstream count and client answers disagree (errors, retries); not
    those counted at the client, whose requests need not reach the upstream (cache hits)."""
    out = []
    for key, runs in results.items():
        for i, m in enumerate(runs):
            if isinstance(m, Measured) and m.counted_at != "client" and m.upstream != m.answered:
                out.append(f"- **{key}, run {i + 1}: {m.upstream} requests reached the "
                           f"upstream but {m.answered} were answered 2xx**")
    return out


def render(scenarios: list[Scenario], results: Results, rps: dict[str, list[float]],
           skipped: dict[str, str], meta: dict[str, Any]) -> str:
    """The report (markdown)."""
    rps_note = (f"median of {meta['rps_rounds']} round(s) of {meta['rps_duration']:g} s "
                "with wrk at c=64, natively (no valgrind), scenarios in rotating order; "
                "`x relay` is the median of per-round ratios" if meta["rps_rounds"]
                else "not measured (`--no-rps`)")
    lines = [
        "# semproxy instructions per request", "",
        f"Run {meta['started_at']}: {meta['runs']} run(s), each with fresh processes; "
        f"a window is {meta['requests']} requests at concurrency {meta['concurrency']} "
        f"after {meta['warmup']} uncounted ones; {meta['valgrind']}.", "",
        "Command:", "", "```", meta["command"], "```", "", "Machine:", "",
        *meta["machine"], "",
        "## Instructions per request", "",
        "Instructions: valgrind callgrind, event Ir, every thread of the server process, "
        "counted only while the window's load ran (`--instr-atstart=no`, "
        "`callgrind_control -i on` / `-i off`), divided by n, the requests that reached "
        "the mock upstream in the window. Per run, separated by `/`; `spread` is "
        "(max - min) / min over the runs; `x relay` is against the relay of the same run. "
        f"req/s: {rps_note}.", "",
        "| scenario | instructions per request | spread | n | x relay "
        "| req/s c=64 | req/s x relay |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *[row(s, results, rps, skipped) for s in scenarios],
    ]
    extra = comparisons(results)
    if extra:
        lines += ["", *extra]
    bad = warnings(results)
    if bad:
        lines += ["", *bad]
    return "\n".join(lines) + "\n"
