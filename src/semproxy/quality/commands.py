"""`semproxy eval` and `semproxy calibrate`: argument handling and printed output."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from semproxy.config.edit import set_thresholds
from semproxy.config.loader import load_file
from semproxy.config.runtime import GatewayConfig
from semproxy.quality import calibrate as cal
from semproxy.quality.evaluate import evaluate, render
from semproxy.quality.labelled import LabelledPrompt, check_labels, load_jsonl
from semproxy.quality.metrics import Confusion
from semproxy.quality.progress import ProgressBar
from semproxy.quality.tuning import propose, score_all, thresholds_to_write
from semproxy.server.routes import open_selector


def run_eval(args: argparse.Namespace) -> int:
    if args.clinc150:
        from semproxy.quality.clinc150 import convert

        config, data = convert(args.clinc150, args.out, args.k, args.seed,
                               args.aggregation, args.center, args.nearest, args.model, args.pick)
        print(f"wrote {config} and {data}", file=sys.stderr)
        args.config, args.route, args.data = str(config), "clinc150", str(data)
    if not (args.config and args.route and args.data):
        raise ValueError("give --config, --route and --data (or --clinc150 PATH)")
    return asyncio.run(_eval(args))


async def _eval(args: argparse.Namespace) -> int:
    items = load_jsonl(args.data)
    async with open_selector(load_file(args.config), args.route) as selector:
        result = await evaluate(selector, items, ProgressBar(len(items), "eval"))
    print(orjson.dumps(result.summary(), option=orjson.OPT_INDENT_2).decode() if args.json
          else render(result))
    if args.report:
        from semproxy.quality.report import write_report

        page = write_report(result, Path(args.report))
        print(f"report: {page}", file=sys.stderr)
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    """Mistakes (a bad objective, labels or data file) raise ValueError: the CLI
    prints them on one line and exits 2."""
    goal = cal.objective(args.objective)
    if not 0 <= args.holdout < 1:
        raise ValueError("--holdout must be in [0, 1)")
    return asyncio.run(_calibrate(args, goal))


def _line(name: str, c: Confusion) -> str:
    def pct(v: float | None) -> str:
        return "   n/a" if v is None else f"{100 * v:5.1f}%"
    return (f"{name:<28} {pct(c.accuracy())} {pct(c.balanced_accuracy())} "
            f"{pct(c.in_scope_accuracy())} {pct(c.catchall_recall())} "
            f"{pct(c.routed_precision())}")


async def _calibrate(args: argparse.Namespace, goal: Callable[[Confusion], cal.Score]
                     ) -> int:
    config = load_file(args.config)
    items: list[LabelledPrompt] = load_jsonl(args.data)
    async with open_selector(config, args.route) as selector:
        labels = [*selector.scorer.names, selector.spec.catchall]
        check_labels(items, labels, args.data)
        scored = await score_all(selector, items, ProgressBar(len(items), "scoring"))
        found = propose(selector, scored, [i.text for i in items], goal, args.holdout)
        where = (f"held-out {found.held_rows} prompts" if found.held_rows
                 else "all prompts (no hold-out)")
        print(f"objective {args.objective}; fitted on {found.fit_rows} prompts, "
              f"figures on {where}")
        print(f"{'':<28} {'acc':>6} {'bal':>6} {'in-sc':>6} {'catch':>6} {'prec':>6}")
        for name, confusion in found.measured:
            print(_line(name, confusion))
        print("acc: accuracy, catchall prompts included; bal: balanced accuracy (mean recall "
              "per instance); in-sc: accuracy on prompts meant for an instance; catch: share "
              "of catchall prompts that fell back; prec: share of routed prompts that reached "
              "the right instance")
        print(f"balancer threshold: {found.fitted.threshold:.4f}")
        _warn_if_few(found.held_rows or found.fit_rows)
        if args.per_instance:
            for name, t in zip(labels, found.fitted.thresholds, strict=False):
                print(f"  {name:<24} {t:.4f}")
    if args.write:
        _write(args, config, found.fitted, labels[:-1])
    return 0


# Below this many prompts the reported figures are too loose to act on: the 95%
# interval of a share measured on n prompts is up to +-1.96 * sqrt(0.25 / n).
FEW_PROMPTS = 50


def _warn_if_few(rows: int) -> None:
    if rows < FEW_PROMPTS:
        half = 196 * (0.25 / max(rows, 1)) ** 0.5
        print(f"warning: these figures rest on {rows} prompts (95% interval up to "
              f"+-{half:.0f} points); label {FEW_PROMPTS} or more before trusting them",
              file=sys.stderr)


def _write(args: argparse.Namespace, config: GatewayConfig, fitted: cal.Fit,
           names: Sequence[str]) -> None:
    route = next(r for r in config.routes if r.id == args.route)
    per_instance = thresholds_to_write(route, fitted, names, args.per_instance)
    text = Path(args.config).read_text(encoding="utf-8")
    Path(args.write).write_text(set_thresholds(text, args.route, fitted.threshold, per_instance),
                                encoding="utf-8")
    print(f"wrote {args.write}", file=sys.stderr)
