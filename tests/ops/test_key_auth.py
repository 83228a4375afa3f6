"""APISIX key-auth: consumers with keys, presented as a Bearer token or an `apikey` header."""

from __future__ import annotations

from typing import Any

import aiohttp
from tests.conftest import GatewayFactory, chat, instance

CONSUMERS = [{"username": name, "plugins": {"key-auth": {"key": f"key-of-{name}-0123"}}}
             for name in ("alice", "bob", "carol", "dave")]


def keyed_config(**balancer: Any) -> dict[str, Any]:
    plugin = {"instances": [instance(n) for n in ("e1", "e2", "e3")],
              "balancer": balancer, "debug_headers": True}
    return {"listen": "127.0.0.1:0", "consumers": CONSUMERS, "routes": [
        {"id": "keyed", "uri": "/v1/chat/completions",
         "plugins": {"ai-proxy-multi": plugin, "key-auth": {}}},
        {"id": "open", "uri": "/v1/open", "plugins": {"ai-proxy-multi": plugin}}]}


async def post(http: aiohttp.ClientSession, url: str, headers: dict[str, str]
               ) -> tuple[int, str | None]:
    async with http.post(url, json=chat("hi"), headers=headers) as resp:
        return resp.status, resp.headers.get("X-AI-Instance")


async def test_missing_or_unknown_key_is_401_and_a_known_key_passes(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    gw = await gateway(keyed_config())
    url = gw.url + "/v1/chat/completions"
    assert (await post(http, url, {}))[0] == 401
    assert (await post(http, url, {"Authorization": "Bearer not-a-key"}))[0] == 401
    assert (await post(http, url, {"apikey": "key-of-alice-012"}))[0] == 401  # a prefix
    assert (await post(http, url, {"Authorization": "Bearer key-of-alice-0123"}))[0] == 200
    assert (await post(http, url, {"apikey": "key-of-bob-0123"}))[0] == 200
    assert (await post(http, gw.url + "/v1/open", {}))[0] == 200  # no key-auth plugin
    async with http.post(url, json=chat("hi")) as resp:
        body = await resp.json()
    assert resp.status == 401 and body["error"]["code"] == "invalid_api_key"


async def test_hash_on_consumer_pins_each_consumer_to_one_instance(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    gw = await gateway(keyed_config(algorithm="chash", hash_on="consumer"))
    url = gw.url + "/v1/chat/completions"
    picks: dict[str, set[str | None]] = {}
    for consumer in CONSUMERS:
        key = consumer["plugins"]["key-auth"]["key"]  # type: ignore[index]
        for header in ({"apikey": key}, {"Authorization": f"Bearer {key}"}) * 3:
            status, served_by = await post(http, url, header)
            assert status == 200
            picks.setdefault(str(consumer["username"]), set()).add(served_by)
    assert all(len(p) == 1 for p in picks.values())  # stable per consumer, however sent
    assert len(set().union(*picks.values())) > 1  # and consumers spread over instances
