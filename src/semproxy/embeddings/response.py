"""Strict validation of OpenAI-shaped /v1/embeddings responses.

Semantic routing fails open on any bad answer, so every way a response can be
malformed must surface as one `EmbeddingError` with a message an operator can
act on, never as a numpy or KeyError traceback and never as a NaN that would
silently poison the cosine scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from semproxy.errors import EmbeddingError

Vectors = npt.NDArray[np.float32]

# bool is deliberately absent: it subclasses int in Python, and `true` in an
# embedding is a broken endpoint, not the number 1.
_NUMBER_TYPES = frozenset({int, float})
_BODY_EXCERPT = 200


def parse_embeddings_response(status: int, body: bytes, count: int) -> Vectors:
    """The float32 (count, dim) matrix of a response for `count` inputs.

    Row i is the item whose `index` is i, whatever the order of `data`.
    Raises EmbeddingError (reason "embedding_error") for anything malformed.
    """
    if status != 200:
        excerpt = body[:_BODY_EXCERPT].decode("utf-8", "replace")
        raise _malformed(f"endpoint answered HTTP {status}: {excerpt}")
    items = _data_items(_load_object(body), count)
    vectors: list[list[Any] | None] = [None] * count
    for position, item in enumerate(items):
        index, vector = _check_item(item, position, count)
        if vectors[index] is not None:
            raise _malformed(f"data[{position}]: index {index} appears twice")
        vectors[index] = vector
    return _to_matrix(vectors)


def _malformed(detail: str) -> EmbeddingError:
    return EmbeddingError(f"bad embeddings response: {detail}", reason="embedding_error")


def _load_object(body: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:  # also NaN literals and numbers beyond double
        raise _malformed(f"body is not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise _malformed(f"body is a JSON {type(doc).__name__}, expected an object")
    return doc


def _data_items(doc: dict[str, Any], count: int) -> list[Any]:
    data = doc.get("data")
    if not isinstance(data, list):
        raise _malformed("`data` is missing or not a list")
    if len(data) != count:
        raise _malformed(f"`data` has {len(data)} items for {count} inputs")
    return data


def _check_item(item: Any, position: int, count: int) -> tuple[int, list[Any]]:
    """The item's (index, embedding), with the index in range and the embedding a list."""
    if not isinstance(item, dict):
        raise _malformed(f"data[{position}] is not an object")
    index = item.get("index")
    if type(index) is not int:  # `type`, not isinstance: rejects true/false
        raise _malformed(f"data[{position}].index is missing or not an integer")
    if not 0 <= index < count:
        raise _malformed(f"data[{position}].index {index} is out of range 0..{count - 1}")
    vector = item.get("embedding")
    if not isinstance(vector, list) or not vector:
        raise _malformed(f"data[{position}].embedding is missing, null, empty or not a list")
    _check_numbers(vector, position)
    return index, vector


def _check_numbers(vector: list[Any], position: int) -> None:
    # set(map(type, ...)) runs in C: ~3 us for 256 components, so the good case
    # stays cheap; only a bad vector pays for the search that names the culprit.
    if set(map(type, vector)) <= _NUMBER_TYPES:
        return
    culprit = next(i for i, x in enumerate(vector) if type(x) not in _NUMBER_TYPES)
    found = type(vector[culprit]).__name__
    raise _malformed(f"data[{position}].embedding[{culprit}] is {found}, expected a number")


def _to_matrix(vectors: list[list[Any] | None]) -> Vectors:
    # Every slot is filled here: count items, each index in range, none twice.
    rows = [v for v in vectors if v is not None]
    dims = {len(v) for v in rows}
    if len(dims) > 1:
        raise _malformed(f"embeddings have differing dimensions {sorted(dims)}")
    try:
        wide = np.asarray(rows, dtype=np.float64)
    except OverflowError as exc:  # an integer too large for a double
        raise _malformed("a component is too large to be a number") from exc
    # Finite doubles beyond float32 range would become inf in the cast below,
    # so check after casting; errstate silences numpy's overflow warning.
    with np.errstate(over="ignore", invalid="ignore"):
        matrix = wide.astype(np.float32)
    if not np.isfinite(matrix).all():
        row, col = (int(i) for i in np.argwhere(~np.isfinite(matrix))[0])
        raise _malformed(f"embedding {row} component {col} is not finite in float32")
    return matrix.reshape(len(rows), dims.pop() if dims else 0)
