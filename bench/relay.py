"""Reference relay: the least an aiohttp gateway can do per request.

It reads the client body, POSTs it unchanged to one upstream over a shared
keep-alive pool and hands back status, content type and body. Comparing the
gateway with this relay shows what routing, config and observability cost on
top of the unavoidable aiohttp server + client round trip.

    python bench/relay.py --listen 127.0.0.1:8001 --upstream http://127.0.0.1:8000
"""

import argparse

import aiohttp
import uvloop
from aiohttp import web


def build_app(upstream: str) -> web.Application:
    app = web.Application()

    async def session_ctx(app: web.Application):
        connector = aiohttp.TCPConnector(limit=512, ttl_dns_cache=None)
        app["session"] = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        yield
        await app["session"].close()

    async def relay(request: web.Request) -> web.Response:
        body = await request.read()
        headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
        async with app["session"].post(upstream + request.path, data=body, headers=headers) as up:
            payload = await up.read()
            return web.Response(body=payload, status=up.status,
                                headers={"Content-Type": up.headers.get("Content-Type", "")})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.cleanup_ctx.append(session_ctx)
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/{tail:.*}", relay)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    uvloop.install()
    web.run_app(build_app(args.upstream.rstrip("/")), host=host, port=int(port),
                access_log=None, print=None)


if __name__ == "__main__":
    main()
