"""`GET .../models`: the model names a client may send on a route.

A semantic route answers `auto` first (the gateway picks); every route lists
its instances' configured models, since `options.model` decides what each
instance is asked. The Anthropic SDK (it sends `anthropic-version`) gets its
own list shape; everyone else gets OpenAI's.
"""

from __future__ import annotations

from typing import Any

from semproxy.config.spec import RouteSpec

AUTO = "auto"


def model_ids(route: RouteSpec) -> list[str]:
    ids = [AUTO] if route.semantic is not None else []
    for instance in route.instances:
        model = instance.options.get("model")
        if isinstance(model, str) and model not in ids:
            ids.append(model)
    return ids


def openai_list(route: RouteSpec) -> dict[str, Any]:
    return {"object": "list", "data": [
        {"id": name, "object": "model", "created": 0, "owned_by": "semproxy"}
        for name in model_ids(route)]}


def anthropic_list(route: RouteSpec) -> dict[str, Any]:
    ids = model_ids(route)
    return {"data": [{"type": "model", "id": name, "display_name": name,
                      "created_at": "1970-01-01T00:00:00Z"} for name in ids],
            "has_more": False, "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None}
