"""Adding examples to a route over the admin API: the request, and the in-place file edit.

`POST /admin/routes/{id}/examples` (the playground's "add as example" buttons)
takes `{"instance": NAME, "examples": [TEXT, ...]}`. A config file gets the
new examples written into its text where its other examples are, so the
operator's comments and layout stay (`config.edit.add_examples`); the edited
text must load before it replaces the file.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from semproxy.config.edit import ConfigEditError, add_examples
from semproxy.config.loader import load_text
from semproxy.config.spec import GatewayConfig
from semproxy.errors import BadRequestError

MAX_EXAMPLE_CHARS = 2000  # a prompt longer than this cannot be added as an example whole


def replace_file(path: Path, text: str) -> None:
    """Write beside the file, keep its permissions, then rename over it (atomic)."""
    tmp = path.with_name(f".{path.name}.apply.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


def examples_request(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The instance name and the stripped, non-empty example texts of a request body."""
    instance = body.get("instance")
    if not isinstance(instance, str) or not instance:
        raise BadRequestError("'instance' must be the name of an instance on the route")
    texts = body.get("examples")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise BadRequestError("'examples' must be a non-empty list of strings")
    cleaned = [t.strip() for t in texts]
    if not all(cleaned):
        raise BadRequestError("'examples' must not contain blank strings")
    if any(len(t) > MAX_EXAMPLE_CHARS for t in cleaned):
        raise BadRequestError(f"an example is limited to {MAX_EXAMPLE_CHARS} characters")
    return instance, cleaned


async def write_in_place(path: Path, route_id: str, new: Mapping[str, Sequence[str]]
                         ) -> GatewayConfig | None:
    """Add the examples to the config file's text; None when the file cannot be edited
    that way (unreadable, or a shape the edit does not handle), so the caller writes
    the document instead. A ConfigError (the result does not validate) propagates
    and nothing is written."""
    try:
        text = await asyncio.to_thread(path.read_text, "utf-8")
        patched = add_examples(text, route_id, new)
    except (OSError, ConfigEditError):
        return None
    config = await asyncio.to_thread(load_text, patched, str(path))
    try:
        await asyncio.to_thread(replace_file, path, patched)
    except OSError:
        return None
    return config
