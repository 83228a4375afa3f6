"""FakeEmbeddings: an OpenAI-compatible embeddings server with predictable geometry.

Each input text maps to a vector built from keyword axes (see ``DEFAULT_AXES``):
every distinct axis hit by a keyword gets weight 1 and the sum is normalised.
Text without keywords maps to the unit vector on the LAST axis, orthogonal to all
keyword axes. ``vec:0.6,0.8`` in a text returns that vector verbatim (zero-padded
to ``dim``) so tests can pin exact cosines.

Magic words (checked across the whole batch; each produces exactly one fault):

* batch-level: ``EMB_500``, ``EMB_HANG``, ``EMB_SLOW:MS``, ``EMB_NOTOBJ``,
  ``EMB_NOTJSON``, ``EMB_NODATA``, ``EMB_COUNT``
* per-input (only the input containing the word is corrupted): ``EMB_NULL``,
  ``EMB_EMPTY``, ``EMB_STR``, ``EMB_NAN``, ``EMB_INF``, ``EMB_NOINDEX``,
  ``EMB_BADINDEX``, ``EMB_DIM``
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from .common import FakeServer, RecordedRequest, json_response

DEFAULT_AXES: dict[str, int] = {
    "code": 0,
    "python": 0,
    "function": 0,
    "translate": 1,
    "french": 1,
    "summarize": 2,
    "summary": 2,
    "billing": 3,
    "invoice": 3,
    "medical": 4,
}

_WORD_RE = re.compile(r"[a-z0-9_]+")
_VEC_RE = re.compile(r"\bvec:([-+0-9.eE]+(?:,[-+0-9.eE]+)*)")
_SLOW_RE = re.compile(r"\bEMB_SLOW:(\d+)")
# Placeholders swapped for raw (non-JSON-standard) number text after serialisation.
_NAN_MARK = "__FAKE_NAN__"
_INF_MARK = "__FAKE_INF__"


class FakeEmbeddings(FakeServer):
    """OpenAI-compatible ``/embeddings`` server (any POST path)."""

    def __init__(
        self,
        name: str = "embed",
        dim: int = 8,
        axes: Mapping[str, int] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(name, host, port)
        self.dim = dim
        self.axes: dict[str, int] = dict(DEFAULT_AXES if axes is None else axes)
        bad = {k: a for k, a in self.axes.items() if not 0 <= a < dim - 1}
        if bad:
            raise ValueError(f"keyword axes must lie in [0, dim-1) (last axis is reserved): {bad}")
        self.inputs_seen: list[str] = []

    def extra_headers(self) -> dict[str, str]:
        return {"X-Fake-Upstream": self.name}

    def reset(self) -> None:
        super().reset()
        self.inputs_seen.clear()

    # -- geometry ----------------------------------------------------------

    def vector(self, text: str) -> list[float]:
        """The clean embedding this server returns for ``text``."""
        explicit = _VEC_RE.search(text)
        if explicit:
            values = [float(v) for v in explicit.group(1).split(",") if v]
            return values + [0.0] * max(self.dim - len(values), 0)
        hit: set[int] = set()
        for word in _WORD_RE.findall(text.lower()):
            axis = self.axes.get(word)
            if axis is None and word.endswith("s"):
                axis = self.axes.get(word[:-1])
            if axis is not None:
                hit.add(axis)
        vec = [0.0] * self.dim
        if not hit:
            vec[-1] = 1.0
            return vec
        norm = 1.0 / math.sqrt(len(hit))
        for axis in hit:
            vec[axis] = norm
        return vec

    # -- request handling --------------------------------------------------

    async def handle(self, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        body = rec.json
        if not isinstance(body, dict):
            return self.error(400, "request body must be a JSON object")
        raw = body.get("input")
        inputs: list[str] = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        if not inputs or not all(isinstance(t, str) for t in inputs):
            return self.error(400, "'input' must be a string or a non-empty list of strings")
        self.inputs_seen.extend(inputs)
        batch = "\n".join(inputs)

        slow = _SLOW_RE.search(batch)
        if slow and not await self.sleep(int(slow.group(1)) / 1000):
            return self.error(503, "server shutting down")
        if "EMB_HANG" in batch:
            await self.sleep(3600)
            return self.error(503, "server shutting down")
        if "EMB_500" in batch:
            return self.error(500, "steered embedding failure")
        if "EMB_NOTOBJ" in batch:
            return json_response([1, 2], headers=self.extra_headers())
        if "EMB_NOTJSON" in batch:
            return web.Response(
                text="this is not json", content_type="text/plain", headers=self.extra_headers()
            )

        model = body.get("model") if isinstance(body.get("model"), str) else "fake-embedding"
        tokens = sum(len(t.split()) for t in inputs)
        payload: dict[str, Any] = {
            "object": "list",
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        if "EMB_NODATA" in batch:
            return json_response(payload, headers=self.extra_headers())
        data = [self._item(i, text) for i, text in enumerate(inputs)]
        if "EMB_COUNT" in batch:
            data.pop()
        payload["data"] = data
        encoded = orjson.dumps(payload)
        encoded = encoded.replace(f'"{_NAN_MARK}"'.encode(), b"NaN")
        encoded = encoded.replace(f'"{_INF_MARK}"'.encode(), b"1e999")
        return web.Response(
            body=encoded,
            headers={"Content-Type": "application/json", **self.extra_headers()},
        )

    def _item(self, index: int, text: str) -> dict[str, Any]:
        vec: list[Any] = self.vector(text)
        item: dict[str, Any] = {"object": "embedding", "index": index, "embedding": vec}
        if "EMB_NULL" in text:
            item["embedding"] = None
        elif "EMB_EMPTY" in text:
            item["embedding"] = []
        elif "EMB_STR" in text:
            vec[0] = "x"
        elif "EMB_NAN" in text:
            vec[0] = _NAN_MARK
        elif "EMB_INF" in text:
            vec[0] = _INF_MARK
        elif "EMB_NOINDEX" in text:
            del item["index"]
        elif "EMB_BADINDEX" in text:
            item["index"] = 99
        elif "EMB_DIM" in text:
            vec.extend([0.0, 0.0, 0.0])
        return item
