"""`semproxy eval`, `calibrate` and `tune`: argument handling and printed output."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from semproxy.config.edit import add_examples, set_thresholds
from semproxy.config.loader import load_file
from semproxy.config.spec import GatewayConfig
from semproxy.embeddings.factory import EmbedderPool
from semproxy.quality import calibrate as cal
from semproxy.quality.evaluate import evaluate, rate_lines, render
from semproxy.quality.labelled import LabelledPrompt, check_labels, load_jsonl
from semproxy.quality.metrics import Confusion
from semproxy.quality.progress import ProgressBar
from semproxy.quality.tuning import (
    BEFORE,
    PER_INSTANCE,
    SINGLE,
    Proposal,
    propose,
    score_all,
    thresholds_to_write,
)
from semproxy.runtime.compile import router_for
from semproxy.transport.http import AiohttpTransport


def tool_config(path: str) -> GatewayConfig:
    """The config of a command that calls no upstream (explain, eval, calibrate, tune):
    an unset `${VAR}` is a warning, not an error; warnings go to stderr as plain lines."""
    config = load_file(path, allow_unset=True)
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return config


def run_eval(args: argparse.Namespace) -> int:
    if args.clinc150:
        from semproxy.quality.clinc150 import convert

        config, data = convert(args.clinc150, args.out, args.k, args.seed,
                               args.aggregation, args.center, args.nearest, args.model, args.pick,
                               args.background_weight)
        print(f"wrote {config} and {data}", file=sys.stderr)
        args.config, args.route, args.data = str(config), "clinc150", str(data)
    if not (args.config and args.route and args.data):
        raise ValueError("give --config, --route and --data (or --clinc150 PATH)")
    return asyncio.run(_eval(args))


async def _eval(args: argparse.Namespace) -> int:
    items = load_jsonl(args.data)
    found = None
    async with router_for(tool_config(args.config), args.route) as router:
        result = await evaluate(router, items, ProgressBar(len(items), "eval"))
        if args.folds:
            scored = await score_all(router, items)
            found = propose(router, scored, [i.text for i in items],
                            cal.objective("balanced"), args.folds)
    summary = result.summary()
    if found is not None:
        summary["cross_validated"] = proposal_json(found)
    print(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode() if args.json
          else render(result))
    if found is not None and not args.json:
        print("\nwith thresholds from `semproxy calibrate` (objective balanced), estimated "
              "on prompts each fit did not see:")
        print(render_proposal("balanced", found, with_config=False))
    if args.report:
        from semproxy.quality.report import write_report

        page = write_report(result, Path(args.report))
        print(f"report: {page}", file=sys.stderr)
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    """Mistakes (a bad objective, too few folds, bad labels or data file) raise
    ValueError: the CLI prints them on one line and exits 2."""
    goal = cal.objective(args.objective)
    if args.folds < 2:
        raise ValueError("--folds must be at least 2")
    return asyncio.run(_calibrate(args, goal))


async def _calibrate(args: argparse.Namespace, goal: Callable[[Confusion], cal.Score]
                     ) -> int:
    config = tool_config(args.config)
    items: list[LabelledPrompt] = load_jsonl(args.data)
    async with router_for(config, args.route) as router:
        labels = [*router.names, router.spec.catchall]
        check_labels(items, labels, args.data)
        scored = await score_all(router, items, ProgressBar(len(items), "scoring"))
        found = propose(router, scored, [i.text for i in items], goal, args.folds)
    print(render_proposal(args.objective, found))
    print(f"best by the objective: {found.chosen}"
          + (": nothing fitted measures better than the config's own thresholds"
             if found.chosen == BEFORE else ""))
    print(f"balancer threshold (fitted on all {found.prompts} prompts): "
          f"{found.fits[SINGLE].threshold:.4f}")
    if args.per_instance:
        for name, t in zip(labels, found.fits[PER_INSTANCE].thresholds, strict=False):
            print(f"  {name:<24} {t:.4f}")
    if args.write:
        return _write(args, config, found, labels[:-1])
    return 0


def proposal_json(found: Proposal) -> dict[str, object]:
    return {"folds": found.folds, "prompts": found.prompts, "best": found.chosen,
            "threshold": found.fits[SINGLE].threshold, "fold_thresholds": found.fold_thresholds,
            "measured": [{"name": name, **{k: r.as_dict() for k, r in c.rates().items()}}
                         for name, c in found.measured]}


def render_proposal(objective: str, found: Proposal, with_config: bool = True) -> str:
    spread = (f"{min(found.fold_thresholds):.4f}-{max(found.fold_thresholds):.4f}"
              if found.fold_thresholds else "n/a")
    lines = [f"objective {objective}; {found.folds}-fold cross-validation over "
             f"{found.prompts} prompts (each fold decided by thresholds fitted on the "
             f"others; fold thresholds {spread})"]
    for name, confusion in found.measured[0 if with_config else 1:]:
        lines += ["", name, rate_lines(confusion)]
    warnings = found.measured[0][1].warnings() if with_config else []
    lines += ["", *(f"warning: {w}" for w in warnings)] if warnings else []
    return "\n".join(lines)


def _write(args: argparse.Namespace, config: GatewayConfig, found: Proposal,
           names: Sequence[str]) -> int:
    """Write the best-measured row (or the one asked for); a row that measures worse
    than the config's own thresholds only with --allow-worse."""
    row = PER_INSTANCE if args.per_instance else \
        SINGLE if args.allow_worse and found.chosen == BEFORE else found.chosen
    if found.is_worse(row) and not args.allow_worse:
        print(f"{args.write} not written: {row} measures worse than the config's own "
              f"thresholds ({_value(found.scores[row])} against "
              f"{_value(found.scores[BEFORE])} by the objective); --allow-worse writes it "
              "anyway", file=sys.stderr)
        return 1
    text = Path(args.config).read_text(encoding="utf-8")
    if row != BEFORE:
        route = next(r for r in config.routes if r.id == args.route)
        fit = found.fits[row]
        text = set_thresholds(text, args.route, fit.threshold,
                              thresholds_to_write(route, fit, names, args.per_instance))
    Path(args.write).write_text(text, encoding="utf-8")
    said = "the config's own, unchanged" if row == BEFORE else row
    worse = ", which measures worse than the config's own" if found.is_worse(row) else ""
    print(f"wrote {args.write} ({said}{worse})", file=sys.stderr)
    return 0


def _value(score: cal.Score) -> str:
    met, value = score
    return f"{100 * value:.1f}%" + ("" if met else " (target not met)")


def run_tune(args: argparse.Namespace) -> int:
    """Mistakes raise ValueError, like calibrate's: one line on stderr, exit 2."""
    if args.count < 1:
        raise ValueError("--count must be at least 1")
    if args.folds == 1 or args.folds < 0:
        raise ValueError("--folds must be 0 (skip the estimate) or at least 2")
    return asyncio.run(_tune(args))


async def _tune(args: argparse.Namespace) -> int:
    from semproxy.quality.tune import propose_examples
    from semproxy.quality.tune import render as render_tune

    config = tool_config(args.config)
    route = next((r for r in config.routes if r.id == args.route), None)
    if route is None or route.semantic is None:
        raise ValueError(f"no semantic route with id {args.route!r}")
    items = load_jsonl(args.data)
    transport = AiohttpTransport()
    try:
        embedder = EmbedderPool(transport).get(route.semantic.embeddings)
        found = await propose_examples(route, embedder, items, args.count, args.folds)
    finally:
        await transport.aclose()
    print(render_tune(found, args.count))
    if args.write:
        text = Path(args.config).read_text(encoding="utf-8")
        added = found.by_instance(everything=args.allow_unsupported)
        Path(args.write).write_text(add_examples(text, args.route, added) if added else text,
                                    encoding="utf-8")
        count = sum(map(len, added.values()))
        print(f"wrote {args.write} ({count} example{'' if count == 1 else 's'} added)",
              file=sys.stderr)
    return 0
