"""Every admin write: a change to the stored document, made under the store's lock.

A write is not a document computed from the version this worker happens to
run: another worker, replica or write may have changed the store since. It is a
`Change` (a function of the stored document) that the store applies to what it
holds now, with no other write in between (`ConfigSource.update`). The change
checks what the client sent against the stored document: masks restored,
references to the environment only where the operator's file has them or
`admin.allow_env` names them. The new version must load before it is stored;
then the watcher applies it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

from semproxy.admin.reload import ConfigWatcher
from semproxy.config.edit import ConfigEditError
from semproxy.config.masking import MASK, masked_paths, restore_masked
from semproxy.config.secrets import admin_references
from semproxy.config.source import Change, ConfigSource, SourceError
from semproxy.errors import (
    BadRequestError,
    ConfigError,
    ConfigRejected,
    ConflictError,
    GatewayError,
    NotFoundError,
    UnavailableError,
)
from semproxy.server.app import Gateway

log = logging.getLogger("semproxy.admin")


class ConfigWriter:
    """Runs changes against the store and applies what they stored."""

    def __init__(self, gateway: Gateway, watcher: ConfigWatcher, store: ConfigSource) -> None:
        self.gateway = gateway
        self.watcher = watcher
        self.store = store

    @property
    def allowed_env(self) -> Collection[str]:
        admin = self.gateway.config.admin
        return () if admin is None else frozenset(admin.allow_env)

    async def write(self, change: Change) -> dict[str, Any] | None:
        """Store the change and reload: {version, applied, warnings}, or None when the
        change had nothing to write. Refusals are client errors; the store keeps
        what it had."""
        try:
            config = await self.store.update(change)
        except GatewayError:
            raise
        except ConfigError as exc:
            raise ConfigRejected(exc.errors) from exc
        except ConfigEditError as exc:
            raise ConflictError(f"the config file cannot be edited without losing what is "
                                f"written in it ({exc}); edit it by hand") from exc
        except SourceError as exc:
            raise UnavailableError(f"config store unavailable: {exc}") from exc
        except OSError as exc:
            raise UnavailableError(f"config file cannot be written: "
                                   f"{exc.strerror or exc}") from exc
        except Exception as exc:
            # A document that breaks a builder in a way no check foresaw is still
            # the client's bad input: 400, and the running version stays.
            log.exception("admin write rejected: the config could not be built")
            raise ConfigRejected([f"<root>: the config could not be built "
                                  f"({type(exc).__name__})"]) from exc
        if config is None:
            return None
        await self.watcher.reload()
        return {"version": config.version,
                "applied": self.gateway.config.fingerprint == config.fingerprint,
                "warnings": list(config.warnings)}


def route_index(document: dict[str, Any], route_id: str) -> int | None:
    routes = document.get("routes")
    return next((i for i, r in enumerate(routes if isinstance(routes, list) else [])
                 if isinstance(r, dict) and r.get("id") == route_id), None)


def put_route(route: dict[str, Any], allowed: Collection[str]) -> Change:
    """Replace the route with its id where it stands, or add it at the end."""
    def change(document: dict[str, Any]) -> dict[str, Any]:
        routes = list(document.get("routes") or [])
        index = route_index(document, route["id"])
        at = len(routes) if index is None else index
        checked = checked_route(route, None if index is None else routes[index],
                                f"routes[{at}]", allowed)
        routes[at:at + 1] = [checked]
        document["routes"] = routes
        return document
    return change


def delete_route(route_id: str) -> Change:
    def change(document: dict[str, Any]) -> dict[str, Any]:
        index = route_index(document, route_id)
        if index is None:
            raise NotFoundError(f"no route with id {route_id!r}")
        del document["routes"][index]
        return document
    return change


def add_examples(route_id: str, instance: str, texts: Sequence[str], allowed: Collection[str],
                 added: list[str]) -> Change:
    """Append the texts the instance does not have yet to its examples; `added` gets them.

    An example is no credential: one that holds a `${VAR}` is refused, as the loader
    would fill it in from the environment (and send it to the embeddings endpoint).
    """
    def change(document: dict[str, Any]) -> dict[str, Any] | None:
        index = route_index(document, route_id)
        if index is None:
            raise NotFoundError(f"no route with id {route_id!r}")
        multi = (document["routes"][index].get("plugins") or {}).get("ai-proxy-multi") or {}
        instances = multi.get("instances") or []
        j = next((j for j, i in enumerate(instances)
                  if isinstance(i, dict) and i.get("name") == instance), None)
        if j is None:
            raise BadRequestError(f"route {route_id!r} has no instance {instance!r}")
        have = list(instances[j].get("examples") or [])
        added[:] = [t for t in dict.fromkeys(texts) if t not in have]
        if not added:
            return None
        instances[j]["examples"] = [*have, *added]
        where = f"routes[{index}].plugins.ai-proxy-multi.instances[{j}].examples"
        _refuse(admin_references(instances[j]["examples"], have, allowed, where))
        return document
    return change


def checked_route(route: dict[str, Any], stored: Any, path: str, allowed: Collection[str]
                  ) -> dict[str, Any]:
    """A route sent over the admin API, with masked credentials given back their stored
    values; refused when a mask stands for nothing or it names the environment."""
    if stored is not None:
        route = restore_masked(route, stored)
    _refuse([f"{where}: {MASK} stands for a stored credential, but there is none here; "
             "give the value" for where in masked_paths(route, path)]
            + admin_references(route, stored, allowed, path))
    return route


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ConfigRejected(problems)
