"""The instruction mode of the benchmark (`bash bench/run.sh --instructions`) is not run
in CI (it needs valgrind and an hour); its parsing and reporting are checked here."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from callgrind import callgrind_argv, dump_totals  # noqa: E402
from instructions_report import SCENARIOS, SERVERS, Measured, Scenario, render, spread  # noqa: E402
from prompts import LUA, BodyMaker, body_for, read_prompt_sets, varied_prompt  # noqa: E402

# The head of a dump that valgrind 3.19 wrote after `--instr=off` (summary underflowed).
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 11504
part: 2

positions: line
events: Ir
summary: 18446744073703460208

fn=(2) main
0 2967000
totals: 2967610
"""

META = {"started_at": "2026-01-01 00:00 UTC", "command": "bash bench/run.sh --instructions",
        "machine": ["- CPU: test"], "requests": 400, "warmup": 50, "concurrency": 4,
        "runs": 2, "rps_rounds": 3, "rps_duration": 5, "valgrind": "valgrind-3.19.0"}


def test_the_window_total_is_the_totals_line_not_the_summary() -> None:
    assert dump_totals(DUMP) == 2967610


@pytest.mark.parametrize("text", [DUMP.replace("totals: 2967610\n", ""),
                                  DUMP.replace("events: Ir", "events: Dr Ir")])
def test_a_dump_without_totals_or_not_counting_ir_first_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        dump_totals(text)


def test_servers_start_with_nothing_counted() -> None:
    argv = callgrind_argv(Path("cg.out"), ["python", "relay.py"])
    assert "--instr-atstart=no" in argv and argv[-2:] == ["python", "relay.py"]
    assert "--callgrind-out-file=cg.out" in argv


def test_the_prompt_sets_are_read_from_post_lua() -> None:
    sets = read_prompt_sets(LUA.read_text())
    assert len(sets["small"]) == 8 and len(set(sets["small"])) == 8
    assert sets["small"][0] == "write a python function that reverses a linked list"
    assert (len(sets["verbs"]), len(sets["topics"]), len(sets["styles"])) == (12, 14, 7)


def test_a_lua_file_without_a_prompt_table_is_refused() -> None:
    with pytest.raises(ValueError, match="verbs"):
        read_prompt_sets('local small = { "a" }\nlocal topics = { "b" }\nlocal styles = { "c" }')


def test_varied_prompts_follow_post_lua_arithmetic() -> None:
    sets = {"small": ["s"], "verbs": ["v0", "v1", "v2"], "topics": ["t0", "t1"],
            "styles": ["y0", "y1"]}
    # n = 7: verb 7 % 3 = 1; t = 7 // 3 = 2 -> topic 0; s = 2 // 2 = 1 -> style 1
    assert varied_prompt(sets, 7) == "v1 t0 y1 (ref 7)"
    maker = BodyMaker(sets, "varied", seed=100)
    assert len({maker.prompt(i) for i in range(50)}) == 50


def test_bodies_have_each_protocols_shape() -> None:
    assert orjson.loads(body_for("responses", "hi")) == {"model": "auto", "input": "hi"}
    assert orjson.loads(body_for("messages", "hi"))["max_tokens"] == 64
    chat = orjson.loads(BodyMaker({"small": ["a", "b"]}, "small").body(3))
    assert chat["messages"] == [{"role": "user", "content": "b"}]
    assert BodyMaker({"small": ["a", "b"]}, "fixed").prompt(3) == "a"


def test_every_scenario_that_runs_names_a_known_server() -> None:
    live = [s for s in SCENARIOS if not s.pending]
    assert all(s.server in SERVERS for s in live)
    assert {s.key for s in SCENARIOS if s.pending} == set()


def test_n_comes_from_the_upstream_unless_the_scenario_counts_at_the_client() -> None:
    assert Measured(1_000_000, 4, 5).per_request == 250_000
    assert Measured(1_000_000, 0, 5, "client").per_request == 200_000
    assert math.isnan(Measured(1_000_000, 0, 0).per_request)
    assert spread([100.0, 101.0]) == pytest.approx(0.01)
    assert math.isnan(spread([100.0]))


def test_the_report_shows_each_run_ratios_slots_and_disagreements() -> None:
    results = {"relay": [Measured(600_000_000, 1000, 1000), Measured(606_000_000, 1000, 1000)],
               "rr": [Measured(900_000_000, 1000, 1000), Measured(909_000_000, 1000, 1000)],
               "rr-msg": [Measured(945_000_000, 1000, 1000), "exited with 1"],
               "rr-nolog": [Measured(850_000_000, 1000, 998), Measured(859_000_000, 1000, 1000)]}
    rps = {"relay": [1000.0, 1100.0, 900.0], "rr": [600.0, 550.0, 630.0]}
    wanted = [s for s in SCENARIOS if s.key in {"relay", "rr", "rr-msg", "rr-nolog",
                                                "sem-acc-miss"}]
    wanted.append(Scenario("rr-guard", "round-robin x3 with a guard", "gw-rr-guard",
                           pending="slot: the guard is not built yet"))
    text = render(wanted, results, rps, {"gw-accurate": "model: accurate unavailable: x"},
                  META)
    lines = text.splitlines()
    relay = next(line for line in lines if line.startswith("| minimal aiohttp relay"))
    assert "600.0k / 606.0k | 1.0% | 1000 / 1000 | 1.00 / 1.00 | 1,000 | 1.00 |" in relay
    rr = next(line for line in lines if line.startswith("| round-robin x3 |"))
    # req/s ratio: median of 600/1000, 550/1100, 630/900 = 0.6
    assert "900.0k / 909.0k | 1.0% | 1000 / 1000 | 1.50 / 1.50 | 600 | 0.60 |" in rr
    msg = next(line for line in lines if "Anthropic Messages client |" in line)
    assert "945.0k / - |" in msg
    assert "skipped: model: accurate unavailable: x" in text
    assert "slot: the guard is not built yet" in text
    assert "Anthropic Messages x Chat Completions on the same route" in text
    assert "1.05 / -" in text
    assert "`--no-access-log` on `rr` saves, per run: 50.0k / 50.0k" in text
    assert "rr-nolog, run 1: 1000 requests reached the upstream but 998 were answered" in text
    assert "bash bench/run.sh --instructions" in text


def test_the_semantic_route_with_the_cache_is_measured_against_the_same_route_without() -> None:
    sem = next(s for s in SCENARIOS if s.key == "sem-cache-miss")
    ref = next(s for s in SCENARIOS if s.key == "sem-miss")
    assert sem.prompts == ref.prompts == "varied" and not sem.pending
    assert SERVERS[sem.server].kind == "local-cache" and SERVERS[ref.server].kind == "local"
    import run  # bench/run.py: the configs both modes start

    cached = run.gateway_config(1, "local-cache", "http://m", "http://m")
    plain = run.gateway_config(1, "local", "http://m", "http://m")
    plugins = cached["routes"][0]["plugins"]
    assert plugins["ai-cache"] == {"layers": ["exact", "semantic"]}
    # The same semantic route, the local model: only the cache differs.
    assert plugins["ai-proxy-multi"] == plain["routes"][0]["plugins"]["ai-proxy-multi"]
    assert plugins["ai-proxy-multi"]["balancer"]["algorithm"] == "semantic"
    assert plugins["ai-proxy-multi"]["embeddings"] == {"provider": "local"}
    assert ("sem-cache-miss", "sem-miss", 0.9) in run.CACHE_TARGETS


def test_the_report_compares_each_cache_scenario_with_its_reference() -> None:
    results = {"relay": [Measured(600_000_000, 1000, 1000)],
               "sem-miss": [Measured(1_200_000_000, 1000, 1000)],
               "sem-cache-miss": [Measured(1_300_000_000, 1000, 1000)],
               "rr-varied": [Measured(900_000_000, 1000, 1000)],
               "rr-cache-exact-miss": [Measured(990_000_000, 1000, 1000)]}
    wanted = [s for s in SCENARIOS if s.key in results]
    text = render(wanted, results, {}, {}, {**META, "runs": 1, "rps_rounds": 0})
    # 1200 / 1300 = 0.92; 900 / 990 = 0.91
    assert ("- `sem-cache-miss` against `sem-miss` (its instructions per request over "
            "`sem-cache-miss`'s, per run): 0.92; target >= 0.9: met") in text
    assert "`rr-cache-exact-miss` against `rr-varied`" in text and "0.91; target" in text
    slow = {**results, "sem-cache-miss": [Measured(1_400_000_000, 1000, 1000)]}
    assert "0.86; target >= 0.9: not met" in render(wanted, slow, {}, {},
                                                    {**META, "runs": 1, "rps_rounds": 0})
    assert "`rr-cache` against" not in text  # no figures, no line
    # Hits never reach the upstream: counted at the client, not a disagreement.
    hits = {**results, "rr-cache": [Measured(560_000_000, 0, 1000, "client")]}
    text = render([*wanted, next(s for s in SCENARIOS if s.key == "rr-cache")], hits, {}, {},
                  {**META, "runs": 1, "rps_rounds": 0})
    assert "reached the upstream" not in text
    assert "- `rr-cache` against `relay` (its instructions per request over `rr-cache`'s, " \
           "per run): 1.07; target >= 1.5: not met" in text
