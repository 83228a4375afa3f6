"""Command line: serve, validate, explain, config push."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys

import orjson

from semproxy.config.loader import load_file, parse_document
from semproxy.config.source import ConfigSource, EtcdSource, FileSource
from semproxy.errors import ConfigError
from semproxy.observability.logging import setup_logging


def make_source(args: argparse.Namespace) -> ConfigSource:
    if args.etcd:
        return EtcdSource(args.etcd, args.prefix, args.listen)
    return FileSource(args.config)


def _serve(args: argparse.Namespace) -> int:
    from semproxy.server.run import run

    if not args.config and not args.etcd:
        raise SystemExit("serve: give --config FILE or --etcd URL")
    if args.config:
        load_file(args.config)  # fail fast, with field paths, before any worker starts
    if args.no_access_log:
        logging.getLogger("semproxy.access").setLevel(logging.WARNING)
    return run(functools.partial(make_source, args), args.listen, args.workers)


def _validate(args: argparse.Namespace) -> int:
    config = load_file(args.config)
    for warning in config.warnings:
        print(f"warning: {warning}")
    print(f"{args.config}: ok ({len(config.routes)} routes, version {config.version})")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from semproxy.server.explain import explain, render

    config = load_file(args.config)
    result = asyncio.run(explain(config, args.route, args.prompt))
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() if args.json
          else render(result))
    return 0


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
    p = argparse.ArgumentParser(prog="semproxy", description="LLM gateway with semantic routing")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="config file (YAML or JSON), watched for changes")
    serve.add_argument("--etcd", help="etcd endpoint, e.g. http://127.0.0.1:2379")
    serve.add_argument("--prefix", default="/semproxy", help="etcd key prefix")
    serve.add_argument("--listen", help="HOST:PORT, overrides the config's listen")
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--no-access-log", action="store_true")
    serve.set_defaults(func=_serve)
    validate = sub.add_parser("validate", help="check a config file")
    validate.add_argument("config")
    validate.set_defaults(func=_validate)
    explain = sub.add_parser("explain", help="score a prompt against a semantic route")
    explain.add_argument("--config", required=True)
    explain.add_argument("--route", required=True)
    explain.add_argument("--json", action="store_true")
    explain.add_argument("prompt")
    explain.set_defaults(func=_explain)
    config = sub.add_parser("config", help="config storage commands")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    push = config_sub.add_parser("push", help="validate a file and write it to etcd")
    push.add_argument("file")
    push.add_argument("--etcd", required=True)
    push.add_argument("--prefix", default="/semproxy")
    push.set_defaults(func=_push)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    setup_logging(args.log_level, args.log_format)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        where = getattr(args, "config", None) or getattr(args, "file", None) or "config"
        print(f"{where}: invalid config", file=sys.stderr)
        for line in exc.errors:
            print(f"  {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
