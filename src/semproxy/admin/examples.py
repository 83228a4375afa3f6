"""Adding examples to a route over the admin API: what a request may carry.

`POST /admin/routes/{id}/examples` (the playground's "add as example" buttons)
takes `{"instance": NAME, "examples": [TEXT, ...]}`; the write itself is an
admin write like any other (`admin/writes.py`): the file is edited in place,
comments kept, and the edited text must load before it replaces the file.
"""

from __future__ import annotations

from typing import Any

from semproxy.errors import BadRequestError

MAX_EXAMPLE_CHARS = 2000  # a prompt longer than this cannot be added as an example whole


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
