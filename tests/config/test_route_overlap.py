"""A route that takes paths from another route is warned about (validate, load, log)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import instance, route_config

from semproxy.config.loader import load_data
from semproxy.config.overlap import RouteUri, overlap_warnings

from .test_validate_cli import validate, write


def routes(*uris: str) -> list[RouteUri]:
    return [RouteUri(i, f"r{i}", uri) for i, uri in enumerate(uris)]


def test_disjoint_routes_give_no_warning() -> None:
    assert overlap_warnings(routes("/v1/*", "/v2/*", "/v1", "/other/x")) == []


def test_a_longer_prefix_and_an_exact_path_take_from_a_prefix() -> None:
    warnings = overlap_warnings(routes("/v1/*", "/v1/chat/*", "/v1/embeddings"))
    assert [w.split(" from ")[0] for w in warnings] == [
        "routes[1].uri: takes every path under /v1/chat/",
        "routes[2].uri: takes the path /v1/embeddings"]
    assert all("routes[0] (id r0, uri /v1/*)" in w for w in warnings)


def test_the_order_of_the_routes_does_not_hide_the_overlap() -> None:
    (warning,) = overlap_warnings(routes("/v1/chat/*", "/v1/*"))
    assert warning.startswith("routes[0].uri: takes every path under /v1/chat/ from routes[1]")


def test_a_repeated_uri_leaves_one_route_never_served() -> None:
    # An exact path: the route listed last is kept; a prefix: the first one is.
    assert overlap_warnings(routes("/v1/x", "/v1/x"))[0].startswith(
        "routes[0].uri: never served: routes[1]")
    assert overlap_warnings(routes("/v1/*", "/v1/*"))[0].startswith(
        "routes[1].uri: never served: routes[0]")


def test_a_route_that_is_off_takes_nothing() -> None:
    config = route_config([instance("a")], uri="/v1/*")
    config["routes"].append({**route_config([instance("b")], uri="/v1/chat/*",
                                            route_id="off")["routes"][0], "status": 0})
    assert load_data(config, {}).warnings == ()


def test_validate_prints_the_overlap(tmp_path: Path) -> None:
    config = route_config([instance("a")], uri="/v1/*", route_id="auto")
    config["routes"] += route_config([instance("b")], uri="/v1/chat/*", route_id="chat")["routes"]
    result = validate(write(tmp_path, config))
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert out.count("routes[1].uri: takes every path under /v1/chat/ from routes[0] "
                     "(id auto, uri /v1/*)") == 1, out
