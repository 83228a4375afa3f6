"""Browser attacks on the admin listener: DNS rebinding on the keyless loopback admin, and
requests a page on another site makes the browser send."""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
from tests.conftest import instance, route_config

from .conftest import ADMIN_KEY, ServeFactory, with_admin


async def status_of(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> int:
    async with http.get(url, headers=headers) as resp:
        if resp.status == 403:
            assert (await resp.json())["error"]["code"] == "forbidden"
        return resp.status


async def test_the_keyless_admin_answers_only_to_a_loopback_host(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file({**route_config([instance("a")]), "admin": {
        "listen": "127.0.0.1:0", "allow_no_key_on_loopback": True}})
    url = served.admin + "/admin/config"
    port = urlsplit(served.admin).port
    # A rebound name resolves to 127.0.0.1, but the browser still sends its own Host.
    assert await status_of(http, url, {"Host": f"rebind.attacker.example:{port}"}) == 403
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "[::1]"):
        assert await status_of(http, url, {"Host": host}) == 200, host


async def test_a_foreign_origin_is_refused_even_with_the_key(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file(with_admin(route_config([instance("a")])))
    url = served.admin + "/admin/routes"
    key = {"X-API-KEY": ADMIN_KEY}
    own = served.admin  # the playground page itself: same origin
    assert await status_of(http, url, {**key, "Origin": own}) == 200
    for origin in ("http://evil.example", "null", own.replace("127.0.0.1", "localhost")):
        assert await status_of(http, url, {**key, "Origin": origin}) == 403, origin
    assert await status_of(http, url, {**key, "Sec-Fetch-Site": "cross-site"}) == 403
    assert await status_of(http, url, key) == 200  # curl, scripts: no Origin at all


async def test_a_foreign_origin_cannot_write_through_the_keyless_admin(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file({**route_config([instance("a")]), "admin": {
        "listen": "127.0.0.1:0", "allow_no_key_on_loopback": True}})
    async with http.delete(served.admin + "/admin/routes/r1",
                           headers={"Origin": "http://evil.example"}) as resp:
        assert resp.status == 403
    assert [r.spec.id for r in served.running.gateway.table.routes] == ["r1"]
