"""parse_embeddings_response: one test per way a response can be malformed."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from semproxy.embeddings.response import parse_embeddings_response
from semproxy.errors import EmbeddingError


def response(*items: Any) -> bytes:
    return orjson.dumps({"object": "list", "data": list(items), "model": "m"})


def item(index: Any, embedding: Any) -> dict[str, Any]:
    return {"object": "embedding", "index": index, "embedding": embedding}


def rejects(body: bytes, count: int, match: str, status: int = 200) -> None:
    with pytest.raises(EmbeddingError, match=match) as caught:
        parse_embeddings_response(status, body, count)
    assert caught.value.reason == "embedding_error"


def test_good_response_places_rows_by_index_not_list_order() -> None:
    body = response(item(2, [5, 6.5]), item(0, [1.0, 2.0]), item(1, [3.0, -4.0]))
    matrix = parse_embeddings_response(200, body, 3)
    assert matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix, [[1, 2], [3, -4], [5, 6.5]])


def test_non_200_status_is_rejected_with_the_status() -> None:
    rejects(b'{"error": {"message": "quota"}}', 1, "HTTP 429.*quota", status=429)


def test_body_that_is_not_json_is_rejected() -> None:
    rejects(b"<html>bad gateway</html>", 1, "not JSON")


def test_nan_literal_is_rejected_as_not_json() -> None:
    rejects(b'{"data": [{"index": 0, "embedding": [NaN]}]}', 1, "not JSON")


def test_number_beyond_double_range_is_rejected() -> None:
    rejects(b'{"data": [{"index": 0, "embedding": [1e999]}]}', 1, "not JSON|not finite")


def test_json_that_is_not_an_object_is_rejected() -> None:
    rejects(b"[1, 2, 3]", 1, "expected an object")


def test_missing_data_is_rejected() -> None:
    rejects(b'{"object": "list"}', 1, "`data` is missing")


def test_data_that_is_not_a_list_is_rejected() -> None:
    rejects(b'{"data": {"index": 0}}', 1, "not a list")


def test_wrong_number_of_items_is_rejected() -> None:
    rejects(response(item(0, [1.0])), 2, "1 items for 2 inputs")


def test_item_that_is_not_an_object_is_rejected() -> None:
    rejects(response([1.0, 2.0]), 1, r"data\[0\] is not an object")


@pytest.mark.parametrize("embedding", [None, "1,2", [], {"0": 1.0}])
def test_embedding_missing_null_empty_or_not_a_list_is_rejected(embedding: Any) -> None:
    rejects(response(item(0, embedding)), 1, r"data\[0\]\.embedding is missing")


def test_item_without_embedding_key_is_rejected() -> None:
    rejects(response({"index": 0}), 1, r"data\[0\]\.embedding is missing")


@pytest.mark.parametrize(
    ("component", "kind"),
    [("0.5", "str"), (True, "bool"), ([0.5], "list"), (None, "NoneType"), ({}, "dict")],
)
def test_non_numeric_component_is_rejected_and_located(component: Any, kind: str) -> None:
    rejects(response(item(0, [0.1, component])), 1, rf"embedding\[1\] is {kind}")


def test_finite_double_overflowing_float32_is_rejected() -> None:
    rejects(response(item(0, [1.0, 1e300])), 1, "component 1 is not finite")


def test_integer_too_large_for_a_double_is_rejected() -> None:
    huge = b"1" + b"0" * 400
    rejects(b'{"data": [{"index": 0, "embedding": [' + huge + b"]}]}", 1, "not JSON|too large")


def test_missing_index_is_rejected() -> None:
    rejects(response({"embedding": [1.0]}), 1, r"index is missing or not an integer")


@pytest.mark.parametrize("index", ["0", 0.0, True, None])
def test_index_that_is_not_an_integer_is_rejected(index: Any) -> None:
    rejects(response(item(index, [1.0])), 1, "not an integer")


@pytest.mark.parametrize("index", [-1, 2])
def test_index_out_of_range_is_rejected(index: int) -> None:
    rejects(response(item(0, [1.0]), item(index, [2.0])), 2, "out of range 0..1")


def test_duplicated_index_is_rejected() -> None:
    rejects(response(item(0, [1.0]), item(0, [2.0])), 2, "index 0 appears twice")


def test_rows_of_differing_dimension_are_rejected() -> None:
    rejects(response(item(0, [1.0, 2.0]), item(1, [1.0])), 2, r"differing dimensions \[1, 2\]")


def test_zero_inputs_give_an_empty_matrix() -> None:
    assert parse_embeddings_response(200, response(), 0).shape == (0, 0)
