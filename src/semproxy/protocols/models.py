"""The model names a route answers to: `GET .../models`, `GET .../models/{id}`, and which
instances a request that names one may go to.

A client may name an instance's upstream model (`options.model`, when the file
writes it: one that comes from the environment is never shown or matched),
the instance's own name, or one of its `aliases`; such a request goes to the
instances serving that name, failing over among them only. `auto` leaves the
choice to the gateway (a semantic route lists it first), and so does any name
the route does not know, unless the route is `strict_models`: then that is a
404 `model_not_found`, as OpenAI answers for a model it does not have. The
Anthropic SDK (it sends `anthropic-version`) gets its own list shape; everyone
else gets OpenAI's.
"""

from __future__ import annotations

from typing import Any

from semproxy.config.spec import AUTO_MODEL, InstanceSpec, RouteSpec
from semproxy.errors import NotFoundError

AUTO = AUTO_MODEL


class ModelNotFoundError(NotFoundError):
    code = "model_not_found"


def not_found(model: str) -> ModelNotFoundError:
    shown = model if len(model) <= 100 else model[:100] + "..."
    return ModelNotFoundError(f"the model {shown!r} is not served on this route")


def _shown(instance: InstanceSpec) -> tuple[str, ...]:
    """The names an instance is listed under: its model (or, when that is hidden, its
    own name, so it can still be chosen), then its aliases."""
    own = instance.listed_model
    if own is None and "model" in instance.options:
        own = instance.name
    return ((own,) if own is not None else ()) + instance.aliases


def model_ids(route: RouteSpec) -> list[str]:
    ids = [AUTO] if route.semantic is not None else []
    for instance in route.instances:
        ids.extend(name for name in _shown(instance) if name not in ids)
    return ids


def serving(route: RouteSpec) -> dict[str, tuple[str, ...]]:
    """Every name a client may send for particular instances -> those instances, in
    config order (computed once per config version)."""
    found: dict[str, list[str]] = {}
    for instance in route.instances:
        names = {instance.name, *_shown(instance)}
        if instance.listed_model is not None:
            names.add(instance.listed_model)
        for name in names - {AUTO}:
            found.setdefault(name, []).append(instance.name)
    return {name: tuple(instances) for name, instances in found.items()}


def openai_model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "semproxy"}


def anthropic_model(name: str) -> dict[str, Any]:
    return {"type": "model", "id": name, "display_name": name,
            "created_at": "1970-01-01T00:00:00Z"}


def openai_list(route: RouteSpec) -> dict[str, Any]:
    return {"object": "list", "data": [openai_model(name) for name in model_ids(route)]}


def anthropic_list(route: RouteSpec) -> dict[str, Any]:
    ids = model_ids(route)
    return {"data": [anthropic_model(name) for name in ids],
            "has_more": False, "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None}
