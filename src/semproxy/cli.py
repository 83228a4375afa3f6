"""Command line: serve, validate, explain, eval, calibrate, tune, config push."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

import orjson

from semproxy.config.loader import load_data, load_file, parse_document
from semproxy.config.source import ConfigSource, EtcdSource, FileSource, SourceError
from semproxy.errors import ConfigError, GatewayError
from semproxy.observability.logging import setup_logging

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class UsageError(Exception):
    """A mistake on the command line: one line on stderr, exit code 2."""


class CommandParser(argparse.ArgumentParser):
    """argparse, with a mistake reported on one line (the usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def host_port(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port 0-65535, got {text!r}")
    return text


def package_version() -> str:
    try:
        return version("semproxy")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def make_source(args: argparse.Namespace) -> ConfigSource:
    if args.etcd:
        return EtcdSource(args.etcd, args.prefix)
    return FileSource(args.config)


def _serve(args: argparse.Namespace) -> int:
    from semproxy.admin.run import run

    if bool(args.config) == bool(args.etcd):
        raise UsageError("give exactly one of --config FILE and --etcd URL")
    if args.config:
        load_file(args.config)  # fail fast, with field paths, before any worker starts
    if args.no_access_log:
        logging.getLogger("semproxy.access").setLevel(logging.WARNING)
    return run(functools.partial(make_source, args), args.listen, args.workers,
               args.max_connections)


def _validate(args: argparse.Namespace) -> int:
    config = load_file(args.config, allow_unset=True)  # a CI check needs no secrets
    for warning in config.warnings:
        print(f"warning: {warning}")
    routes = len(config.routes)
    print(f"{args.config}: ok ({routes} route{'' if routes == 1 else 's'}, "
          f"version {config.version})")
    return 0


def _spend(args: argparse.Namespace) -> int:
    from semproxy.governance.spend_command import run_spend

    if bool(args.config) == bool(args.etcd):
        raise UsageError("give exactly one of CONFIG and --etcd URL")
    if args.config:  # reading spend needs no upstream secrets
        config = load_file(args.config, allow_unset=True)
    else:
        config = load_data(asyncio.run(_etcd_document(args.etcd, args.prefix)),
                           allow_unset=True)
    return run_spend(config.governance, args.by, args.period, args.consumer, args.ago,
                     args.json)


async def _etcd_document(endpoint: str, prefix: str) -> dict[str, Any]:
    source = EtcdSource(endpoint, prefix)
    try:
        return await source.document()
    finally:
        await source.aclose()


def _explain(args: argparse.Namespace) -> int:
    from semproxy.quality.commands import tool_config
    from semproxy.runtime.compile import explain
    from semproxy.semantic.explain import render
    from semproxy.server.cache_admin import explain_offline, render_cache

    config = tool_config(args.config)
    spec = next((r for r in config.routes if r.id == args.route), None)
    if spec is None or spec.cache is None:  # routing only (or the error that says why not)
        result = asyncio.run(explain(config, args.route, args.prompt))
    else:
        result = asyncio.run(explain(config, args.route, args.prompt)) if spec.semantic \
            else {"route": spec.id}
        result["cache"] = asyncio.run(explain_offline(config, spec.id, args.prompt,
                                                      result.get("pick")))
    if args.json:
        print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
        return 0
    lines = [render(result)] if "pick" in result else [f"route {result['route']}"]
    if "cache" in result:
        lines.append(render_cache(result["cache"]))
    print("\n".join(lines))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from semproxy.quality.commands import run_eval

    return run_eval(args)


def _calibrate(args: argparse.Namespace) -> int:
    if args.cache:
        from semproxy.quality import cache_pairs

        return cache_pairs.run(args)
    if not args.config or not args.route or not args.data:
        raise ValueError("calibrate needs --config, --route and --data (or --cache PAIRS)")
    from semproxy.quality.commands import run_calibrate

    return run_calibrate(args)


def _tune(args: argparse.Namespace) -> int:
    from semproxy.quality.commands import run_tune

    return run_tune(args)


def _push(args: argparse.Namespace) -> int:
    """Validate a config file, then write it to etcd (one key per route)."""
    load_file(args.file)
    with open(args.file, encoding="utf-8") as fh:
        document = parse_document(fh.read(), args.file)

    async def push() -> int:
        source = EtcdSource(args.etcd, args.prefix)
        try:
            return await source.push(document)
        finally:
            await source.aclose()

    revision = asyncio.run(push())
    print(f"pushed {args.file} to {args.etcd} {args.prefix} (revision {revision})")
    return 0


def parser() -> argparse.ArgumentParser:
    p = CommandParser(prog="semproxy", description="LLM gateway with semantic routing")
    p.add_argument("--version", action="version", version=f"semproxy {package_version()}")
    p.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS,
                   help="least severe log level written to stderr (default INFO for serve; "
                        "ERROR for the other commands, which print what they found)")
    p.add_argument("--log-format", choices=["json", "text"], default="json",
                   help="one JSON object per line, or plain text (default json)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _serve_parser(sub)
    validate = sub.add_parser("validate", help="check a config file")
    validate.add_argument("config", help="config file (YAML or JSON)")
    validate.set_defaults(func=_validate)
    explain = sub.add_parser("explain", help="score a prompt against a semantic route, and say "
                             "what its response cache would do with it")
    explain.add_argument("--config", required=True, help="config file (YAML or JSON)")
    explain.add_argument("--route", required=True, help="id of a semantic route in it")
    explain.add_argument("--json", action="store_true", help="print the result as JSON")
    explain.add_argument("prompt", help="the user message to score")
    explain.set_defaults(func=_explain)
    spend = sub.add_parser("spend", help="spend and remaining budgets (SQLite file or Redis)")
    spend.add_argument("config", nargs="?", help="config file (YAML or JSON)")
    spend.add_argument("--etcd", help="read the config from etcd instead, e.g. "
                                      "http://127.0.0.1:2379")
    spend.add_argument("--prefix", default="/semproxy", help="etcd key prefix (default /semproxy)")
    spend.add_argument("--by", default="consumer",
                       choices=["consumer", "group", "route", "instance", "end_user"],
                       help="sum spend per this (default consumer)")
    spend.add_argument("--period", default="month",
                       choices=["minute", "hour", "day", "week", "month", "all"],
                       help="a UTC calendar period (weeks start on Monday), or all "
                            "(default month)")
    spend.add_argument("--ago", type=non_negative_int, default=0,
                       help="that many periods before the current one (1: the last month)")
    spend.add_argument("--consumer", help="also show every limit of this consumer: used, "
                                          "left and when it resets")
    spend.add_argument("--json", action="store_true", help="print JSON (the admin API's shape)")
    spend.set_defaults(func=_spend)
    config = sub.add_parser("config", help="config storage commands")
    config_sub = config.add_subparsers(dest="config_command", required=True, metavar="COMMAND")
    push = config_sub.add_parser("push", help="validate a file and write it to etcd")
    push.add_argument("file", help="config file (YAML or JSON)")
    push.add_argument("--etcd", required=True, help="etcd endpoint, e.g. http://127.0.0.1:2379")
    push.add_argument("--prefix", default="/semproxy", help="etcd key prefix (default /semproxy)")
    push.set_defaults(func=_push)
    _quality_parsers(sub)
    return p


def _serve_parser(sub: argparse._SubParsersAction[CommandParser]) -> None:
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="config file (YAML or JSON), watched for changes")
    serve.add_argument("--etcd", help="etcd endpoint, e.g. http://127.0.0.1:2379")
    serve.add_argument("--prefix", default="/semproxy", help="etcd key prefix (default /semproxy)")
    serve.add_argument("--listen", type=host_port, help="HOST:PORT, overrides the config's listen")
    serve.add_argument("--workers", type=positive_int, default=1,
                       help="worker processes sharing the port (default 1)")
    serve.add_argument("--max-connections", type=positive_int,
                       help="client connections per worker and listener; beyond it the oldest "
                            "are closed (default: 4096, less if the open-file limit is low)")
    serve.add_argument("--no-access-log", action="store_true",
                       help="do not write the per-request access log")
    serve.set_defaults(func=_serve)


def _quality_parsers(sub: argparse._SubParsersAction[CommandParser]) -> None:
    ev = sub.add_parser("eval", help="measure semantic routing on labelled prompts (no LLM calls)")
    ev.add_argument("--config", help="gateway config (with --route and --data)")
    ev.add_argument("--route", help="id of a semantic route in the config")
    ev.add_argument("--data", help="labelled JSONL: {prompt|messages, instance|null} per line")
    ev.add_argument("--report", metavar="DIR", help="write an HTML report with PNG charts here")
    ev.add_argument("--json", action="store_true", help="print the figures as JSON")
    ev.add_argument("--clinc150", metavar="PATH",
                    help="build a route and labelled file from CLINC150 (its data_full.json, "
                         "or clinc150_train_val.json), then eval")
    ev.add_argument("--k", type=positive_int, default=16,
                    help="examples per domain (with --clinc150)")
    ev.add_argument("--seed", type=int, default=0, help="example sampling seed (--clinc150)")
    ev.add_argument("--pick", default="random", choices=["random", "typical"],
                    help="phrases per intent: random (seeded) or the most typical first, "
                         "closest to the intent's mean vector (--clinc150)")
    ev.add_argument("--aggregation", default="max_local_centroid",
                    choices=["max", "top_k_mean", "max_centroid", "max_local_centroid"],
                    help="how an instance's example scores combine (--clinc150)")
    ev.add_argument("--nearest", type=positive_int, default=4,
                    help="balancer k: examples per instance for top_k_mean and the local "
                         "centroid of max_local_centroid (--clinc150)")
    ev.add_argument("--no-center", dest="center", action="store_false",
                    help="score raw vectors instead of centred ones (--clinc150)")
    ev.add_argument("--background-weight", type=float, default=0.0, metavar="W",
                    help="the route's balancer.background_weight (--clinc150; 0: off)")
    ev.add_argument("--model", default="wordllama",
                    help="in-process embedding model, wordllama or all-MiniLM-L6-v2 (--clinc150)")
    ev.add_argument("--out", default="build/clinc150",
                    help="where --clinc150 writes its config and data")
    ev.add_argument("--folds", type=int, default=5,
                    help="also estimate calibrated figures by k-fold cross-validation "
                         "(0: skip)")
    ev.set_defaults(func=_eval)
    cal = sub.add_parser("calibrate", help="choose thresholds on labelled prompts")
    cal.add_argument("--config", help="gateway config (YAML or JSON)")
    cal.add_argument("--route", help="id of a semantic route in the config")
    cal.add_argument("--cache", metavar="PAIRS.jsonl",
                     help="instead: the response cache's similarity_threshold, from labelled "
                          "pairs {a, b, same} (tests/quality/data/cache)")
    cal.add_argument("--wrong-hits", default="0.01",
                     help="with --cache: the largest share of wrong hits to accept")
    cal.add_argument("--model", default="wordllama",
                     help="with --cache: wordllama (default) or accurate")
    cal.add_argument("--data",
                     help="labelled JSONL: {prompt|messages, instance|null} per line")
    cal.add_argument("--objective", default="balanced",
                     help="balanced | accuracy | precision=P | oos_recall=R (default balanced)")
    cal.add_argument("--folds", type=int, default=5,
                     help="k-fold cross-validation: figures on prompts each fit did not see")
    cal.add_argument("--per-instance", action="store_true",
                     help="write the per-instance thresholds, not the best-measured row "
                          "(they overfit on CLINC150)")
    cal.add_argument("--write", metavar="OUT.yaml",
                     help="write the config with the thresholds that measured best (the "
                          "config's own, unchanged, when nothing fitted measures better)")
    cal.add_argument("--allow-worse", action="store_true",
                     help="with --write: write the fitted thresholds even when they measure "
                          "worse than the config's own")
    cal.set_defaults(func=_calibrate)
    tune = sub.add_parser("tune", help="propose labelled prompts to add as examples")
    tune.add_argument("--config", required=True, help="gateway config file (YAML or JSON)")
    tune.add_argument("--route", required=True, help="id of the semantic route to tune")
    tune.add_argument("--data", required=True,
                      help="labelled JSONL (candidates and the prompts they are judged on)")
    tune.add_argument("--count", type=int, default=50, help="how many prompts to propose")
    tune.add_argument("--folds", type=int, default=5,
                      help="estimate the gain by k-fold cross-validation (0: skip)")
    tune.add_argument("--write", metavar="OUT.yaml",
                      help="write the config with the proposed examples cross-validation "
                           "supports added (none when it supports none)")
    tune.add_argument("--allow-unsupported", action="store_true",
                      help="with --write: add every proposed example, supported or not")
    tune.set_defaults(func=_tune)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    setup_logging(args.log_level or ("INFO" if args.command == "serve" else "ERROR"),
                  args.log_format)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        where = getattr(args, "config", None) or getattr(args, "file", None) or "config"
        print(f"{where}: invalid config", file=sys.stderr)
        for line in exc.errors:
            print(f"  {line}", file=sys.stderr)
        return 1
    # Ordinary mistakes (a route that is not there or not semantic, a missing or
    # malformed data file, an unreachable etcd): one line and exit 2, no traceback.
    except (UsageError, GatewayError, SourceError, OSError, ValueError) as exc:
        print(f"semproxy {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
