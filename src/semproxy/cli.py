"""Command line: serve, validate, explain."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from semproxy.config.loader import load_file
from semproxy.errors import ConfigError


def _serve(args: argparse.Namespace) -> int:
    from semproxy.server.run import run

    config = load_file(args.config)
    return run(config, args.listen, args.workers)


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
    print(orjson_dumps(result) if args.json else render(result))
    return 0


def orjson_dumps(data: object) -> str:
    import orjson

    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="semproxy", description="LLM gateway with semantic routing")
    p.add_argument("--log-level", default="INFO")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", required=True)
    serve.add_argument("--listen", help="HOST:PORT, overrides the config's listen")
    serve.add_argument("--workers", type=int, default=1)
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"{getattr(args, 'config', 'config')}: invalid config", file=sys.stderr)
        for line in exc.errors:
            print(f"  {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
