"""Limits, budgets and prices on the admin API: read them, set them, change them.

    GET    /admin/limits                                    every consumer's, group's, route's
    PUT    /admin/consumers/{username}/ai-rate-limiting      a consumer's limits (the plugin)
    PUT    /admin/consumers/{username}/group                 {"group_id": "team-a" | null}
    PUT    /admin/consumer_groups/{id}                       a group: {desc, labels, plugins}
    PUT    /admin/consumer_groups/{id}/ai-rate-limiting      a group's limits
    PUT    /admin/routes/{id}/ai-rate-limiting               a route's (APISIX's plugin, extended)
    PUT    /admin/routes/{id}/instances/{name}/pricing       {"input", "output", "cached_input"}
    DELETE on each of them (but `group`) removes it.

A body is the value as it stands in the config file. Each write is one change
at one path of the document (config/edit_paths.py), made the way every admin
write is (admin/writes.py): to the document as stored when the write runs,
under the store's lock, validated (400 naming the field path), persisted (a
config file keeps its comments and layout; etcd gets the document in one
transaction) and applied by the reload watcher.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from semproxy.config.edit import ConfigEditError
from semproxy.config.edit_paths import PathEdit, Step, apply
from semproxy.config.masking import MASK, mask_secrets, mask_value
from semproxy.config.secrets import admin_references
from semproxy.errors import BadRequestError, ConfigRejected, NotFoundError
from semproxy.protocols.body import parse_object
from semproxy.server.app import json_response

if TYPE_CHECKING:
    from semproxy.admin.api import AdminAPI

PLUGIN = "ai-rate-limiting"
PASSWORDS = ("redis_password", "sentinel_password")
GROUP_FIELDS = ("id", "desc", "labels", "plugins")


class LimitsAPI:
    def __init__(self, api: AdminAPI) -> None:
        self.api = api

    def mount(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/admin/limits", self.overview)
        for path in ("/admin/consumers/{username}/ai-rate-limiting",
                     "/admin/consumer_groups/{id}/ai-rate-limiting",
                     "/admin/routes/{id}/ai-rate-limiting",
                     "/admin/routes/{id}/instances/{name}/pricing"):
            r.add_put(path, self.put_value)
            r.add_delete(path, self.delete_value)
        r.add_put("/admin/consumers/{username}/group", self.put_group_of)
        r.add_put("/admin/consumer_groups/{id}", self.put_group)
        r.add_delete("/admin/consumer_groups/{id}", self.delete_group)

    @property
    def document(self) -> dict[str, Any]:
        return dict(self.api.gateway.config.document)

    async def overview(self, request: web.Request) -> web.Response:
        doc = self.document
        return json_response(hide_passwords(mask_secrets({
            "version": self.api.gateway.config.version,
            "consumers": [{"username": c.get("username"), "group_id": c.get("group_id"),
                           PLUGIN: _plugins(c).get(PLUGIN)} for c in _items(doc, "consumers")],
            "consumer_groups": [{"id": g.get("id"), PLUGIN: _plugins(g).get(PLUGIN)}
                                for g in _items(doc, "consumer_groups")],
            "routes": [{"id": r.get("id"), PLUGIN: _plugins(r).get(PLUGIN),
                        "pricing": _prices(r)} for r in _items(doc, "routes")]})))

    async def put_value(self, request: web.Request) -> web.Response:
        path, where = self._target(request)
        body = parse_object(await request.read())
        body = restore_passwords(body, _value_at(self.document, path), where)
        stored = _value_at(self.document, path)
        return await self._write(PathEdit("set", path, self._checked(body, stored, where)))

    async def delete_value(self, request: web.Request) -> web.Response:
        path, where = self._target(request)
        if not _exists(self.document, path):
            raise NotFoundError(f"{where} is not set")
        return await self._write(PathEdit("remove", path))

    async def put_group_of(self, request: web.Request) -> web.Response:
        username = request.match_info["username"]
        consumer = self._consumer(username)
        body = parse_object(await request.read())
        group = body.get("group_id")
        if set(body) != {"group_id"} or not (group is None or isinstance(group, str)):
            raise BadRequestError('give {"group_id": "<group id>"} or {"group_id": null}')
        path: tuple[Step, ...] = (*consumer, "group_id")
        if group is None:
            if not _exists(self.document, path):
                return json_response({"version": self.api.gateway.config.version,
                                      "applied": False, "in_place": False})
            return await self._write(PathEdit("remove", path))
        return await self._write(PathEdit("set", path, group))

    async def put_group(self, request: web.Request) -> web.Response:
        group_id = request.match_info["id"]
        body = parse_object(await request.read())
        unknown = sorted(set(body) - set(GROUP_FIELDS))
        if unknown or body.get("id", group_id) != group_id:
            raise BadRequestError(f"a group has {', '.join(GROUP_FIELDS)}"
                                  f"{'; not ' + ', '.join(unknown) if unknown else ''}"
                                  " (the id is the one in the path)")
        where = f"consumer_groups[id={group_id}]"
        plugin = _plugins(body).get(PLUGIN)
        if isinstance(plugin, dict):
            stored = _value_at(self.document, ("consumer_groups", ("id", group_id), "plugins",
                                               PLUGIN))
            plugin = restore_passwords(plugin, stored, f"{where}.plugins.{PLUGIN}")
            body = {**body, "plugins": {**_plugins(body), PLUGIN: plugin}}
        stored = _value_at(self.document, ("consumer_groups", ("id", group_id)))
        group = self._checked({"id": group_id, **body}, stored, where)
        if any(g.get("id") == group_id for g in _items(self.document, "consumer_groups")):
            return await self._write(PathEdit("set", ("consumer_groups", ("id", group_id)),
                                              group))
        return await self._write(PathEdit("append", ("consumer_groups",), group))

    async def delete_group(self, request: web.Request) -> web.Response:
        group_id = request.match_info["id"]
        if not any(g.get("id") == group_id for g in _items(self.document, "consumer_groups")):
            raise NotFoundError(f"no consumer group {group_id!r}")
        return await self._write(PathEdit("remove", ("consumer_groups", ("id", group_id))))

    def _target(self, request: web.Request) -> tuple[tuple[Step, ...], str]:
        """The path a value route names (404 when its owner is not in the config)."""
        match = request.match_info
        if "username" in match:
            return (*self._consumer(match["username"]), "plugins", PLUGIN), \
                f"consumers[username={match['username']}].plugins.{PLUGIN}"
        doc = self.document
        if request.path.startswith("/admin/consumer_groups/"):
            if not any(g.get("id") == match["id"] for g in _items(doc, "consumer_groups")):
                raise NotFoundError(f"no consumer group {match['id']!r}")
            return ("consumer_groups", ("id", match["id"]), "plugins", PLUGIN), \
                f"consumer_groups[id={match['id']}].plugins.{PLUGIN}"
        route = next((r for r in _items(doc, "routes") if r.get("id") == match["id"]), None)
        if route is None:
            raise NotFoundError(f"no route with id {match['id']!r}")
        at: tuple[Step, ...] = ("routes", ("id", match["id"]), "plugins")
        if "name" not in match:
            return (*at, PLUGIN), f"routes[id={match['id']}].plugins.{PLUGIN}"
        return _instance_path(route, at, match["name"])

    def _consumer(self, username: str) -> tuple[Step, ...]:
        if not any(c.get("username") == username for c in _items(self.document, "consumers")):
            raise NotFoundError(f"no consumer {username!r}")
        return ("consumers", ("username", username))

    def _checked(self, value: dict[str, Any], stored: Any, where: str) -> dict[str, Any]:
        """A value sent over the admin API: a reference to the environment is refused
        unless the stored value has it there or `admin.allow_env` names it."""
        problems = admin_references(value, stored, self.api.writer.allowed_env, where)
        if problems:
            raise ConfigRejected(problems)
        return value

    async def _write(self, edit: PathEdit) -> web.Response:
        """The edit made to the document as stored when the write runs, under the
        store's lock (admin/writes.py)."""
        return json_response(await self.api.write_edit(
            lambda document: new_document(document, edit)))


def new_document(document: dict[str, Any], edit: PathEdit) -> dict[str, Any]:
    try:
        changed: dict[str, Any] = apply(document, edit)
    except (ConfigEditError, KeyError, TypeError, AttributeError) as exc:
        raise BadRequestError(f"cannot make this change to the config: {exc}") from exc
    return changed


def hide_passwords(node: Any) -> Any:
    """`node` with the Redis and sentinel passwords of limit plugins shown as `******`
    (a `${VAR}` reference is shown as written): `GET /admin/limits` shows no secret."""
    if isinstance(node, dict):
        return {k: mask_value(v) if k in PASSWORDS and v else hide_passwords(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [hide_passwords(v) for v in node]
    return node


def restore_passwords(body: dict[str, Any], stored: Any, where: str) -> dict[str, Any]:
    """A plugin sent back as `GET /admin/limits` showed it: a `******` password keeps the
    stored one; one that stands for nothing is refused."""
    for name in PASSWORDS:
        if body.get(name) == MASK:
            kept = stored.get(name) if isinstance(stored, dict) else None
            if not isinstance(kept, str):
                raise ConfigRejected([f"{where}.{name}: {MASK} stands for a stored password, "
                                      "but there is none here; give the value"])
            body = {**body, name: kept}
    return body


def _instance_path(route: dict[str, Any], at: tuple[Step, ...], name: str
                   ) -> tuple[tuple[Step, ...], str]:
    plugins = _plugins(route)
    rid = route.get("id")
    multi, single = plugins.get("ai-proxy-multi"), plugins.get("ai-proxy")
    if isinstance(multi, dict) and any(isinstance(i, dict) and i.get("name") == name
                                       for i in multi.get("instances") or []):
        return (*at, "ai-proxy-multi", "instances", ("name", name), "pricing"), \
            f"routes[id={rid}].plugins.ai-proxy-multi.instances[name={name}].pricing"
    if isinstance(single, dict) and single.get("provider") == name:
        return (*at, "ai-proxy", "pricing"), f"routes[id={rid}].plugins.ai-proxy.pricing"
    raise NotFoundError(f"route {rid!r} has no instance {name!r}")


def _items(doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [x for x in doc.get(key) or [] if isinstance(x, dict)]


def _plugins(item: dict[str, Any]) -> dict[str, Any]:
    plugins = item.get("plugins")
    return plugins if isinstance(plugins, dict) else {}


def _prices(route: dict[str, Any]) -> dict[str, Any]:
    plugins = _plugins(route)
    multi, single = plugins.get("ai-proxy-multi"), plugins.get("ai-proxy")
    if isinstance(multi, dict):
        return {str(i.get("name")): i.get("pricing") for i in multi.get("instances") or []
                if isinstance(i, dict)}
    if isinstance(single, dict):
        return {str(single.get("provider")): single.get("pricing")}
    return {}


def _value_at(document: dict[str, Any], path: tuple[Step, ...]) -> Any:
    node: Any = document
    for step in path:
        if isinstance(step, tuple):
            node = next((i for i in node or [] if isinstance(i, dict)
                         and i.get(step[0]) == step[1]), None)
        else:
            node = node.get(step) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _exists(document: dict[str, Any], path: tuple[Step, ...]) -> bool:
    try:
        apply(document, PathEdit("remove", path))
    except (ConfigEditError, KeyError, TypeError, AttributeError):
        return False
    return True
