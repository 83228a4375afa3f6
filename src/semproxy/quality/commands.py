"""`semproxy eval` and `semproxy calibrate`: argument handling and printed output."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import orjson

from semproxy.balancer.semantic import decide
from semproxy.config.edit import set_thresholds
from semproxy.config.loader import load_file
from semproxy.config.runtime import GatewayConfig
from semproxy.quality import calibrate as cal
from semproxy.quality.evaluate import CHUNK, evaluate, open_selector, render
from semproxy.quality.labelled import LabelledDataError, LabelledPrompt, check_labels, load_jsonl
from semproxy.quality.metrics import Confusion
from semproxy.quality.progress import ProgressBar
from semproxy.server.routes import SemanticSelector


def run_eval(args: argparse.Namespace) -> int:
    if args.clinc150:
        from semproxy.quality.clinc150 import convert

        config, data = convert(args.clinc150, args.out, args.k, args.seed,
                               args.aggregation, args.center, args.nearest)
        print(f"wrote {config} and {data}", file=sys.stderr)
        args.config, args.route, args.data = str(config), "clinc150", str(data)
    if not (args.config and args.route and args.data):
        print("eval: give --config, --route and --data (or --clinc150 PATH)", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_eval(args))
    except LabelledDataError as exc:
        print(f"eval: {exc}", file=sys.stderr)
        return 1


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
    try:
        goal = cal.objective(args.objective)
        if not 0 <= args.holdout < 1:
            raise ValueError("--holdout must be in [0, 1)")
        return asyncio.run(_calibrate(args, goal))
    except (LabelledDataError, ValueError) as exc:
        print(f"calibrate: {exc}", file=sys.stderr)
        return 1


async def _score_all(selector: SemanticSelector, texts: Sequence[str]
                     ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray | None]:
    bar = ProgressBar(len(texts), "scoring")
    parts, negs = [], []
    names: tuple[str, ...] = selector.scorer.names
    for start in range(0, len(texts), CHUNK):
        # Blank prompts never reach the scorer in the gateway (no_user_text);
        # scoring them as zero vectors gives 0 everywhere, a catchall-like row.
        refs, scores, negative = await selector.scorer.score_many(texts[start:start + CHUNK])
        names = refs.names
        parts.append(scores)
        negs.append(negative)
        bar.advance(len(scores))
    bar.close()
    negative_all = None if any(n is None for n in negs) else np.vstack(negs)  # type: ignore[arg-type]
    return names, np.vstack(parts), negative_all


def _confusion(selector: SemanticSelector, labels: Sequence[str], scores: np.ndarray,
               negative: np.ndarray | None, thresholds: Sequence[float], expected: np.ndarray,
               rows: np.ndarray) -> Confusion:
    """The decisions `decide` itself makes with these thresholds, as a confusion matrix."""
    spec = selector.spec
    got = [decide(labels[:-1], scores[i], thresholds, spec.catchall, min_margin=spec.min_margin,
                  negative=None if negative is None else negative[i]).pick for i in rows]
    return Confusion.from_names(labels, [labels[e] for e in expected[rows]], got)


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
        texts = [i.text for i in items]
        _, scores, negative = await _score_all(selector, texts)
        index = {name: i for i, name in enumerate(labels)}
        expected = np.array([index[i.instance or labels[-1]] for i in items], dtype=np.intp)
        fit_rows, held_rows = cal.split(texts, expected.tolist(), args.holdout)
        fitted = cal.fit(labels, scores[fit_rows], expected[fit_rows], goal,
                         selector.spec.min_margin,
                         None if negative is None else negative[fit_rows])
        before = [i.threshold for i in selector.scorer.instances]
        single = [fitted.threshold] * len(before)
        rows = held_rows if len(held_rows) else fit_rows
        where = (f"held-out {len(held_rows)} prompts" if len(held_rows)
                 else "all prompts (no hold-out)")
        print(f"objective {args.objective}; fitted on {len(fit_rows)} prompts, figures on {where}")
        print(f"{'':<28} {'acc':>6} {'bal':>6} {'in-sc':>6} {'catch':>6} {'prec':>6}")
        for name, th in (("before (config)", before), (f"threshold {fitted.threshold:.4f}", single),
                         ("+ per-instance thresholds", list(fitted.thresholds))):
            print(_line(name, _confusion(selector, labels, scores, negative, th, expected, rows)))
        print(f"balancer threshold: {fitted.threshold:.4f}")
        if args.per_instance:
            for name, t in zip(labels, fitted.thresholds, strict=False):
                print(f"  {name:<24} {t:.4f}")
    if args.write:
        _write(args, config, fitted, labels[:-1])
    return 0


def _write(args: argparse.Namespace, config: GatewayConfig, fitted: cal.Fit,
           names: Sequence[str]) -> None:
    route = next(r for r in config.routes if r.id == args.route)
    # Without --per-instance, explicit instance thresholds are set to the new
    # balancer threshold too, so the written route behaves as measured.
    explicit = {i.name for i in route.instances if i.threshold is not None}
    chosen = fitted.thresholds if args.per_instance else [fitted.threshold] * len(names)
    per_instance = {n: t for n, t in zip(names, chosen, strict=True)
                    if n in explicit or abs(t - fitted.threshold) > 1e-9}
    text = Path(args.config).read_text(encoding="utf-8")
    Path(args.write).write_text(set_thresholds(text, args.route, fitted.threshold, per_instance),
                                encoding="utf-8")
    print(f"wrote {args.write}", file=sys.stderr)
