"""CLINC's own data_full.json layout (with its test split) is read like the shared copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semproxy.quality.clinc150 import convert, load_dataset
from semproxy.quality.labelled import load_jsonl

FULL = {
    "train": [["what is my balance", "balance"], ["book a flight to rome", "book_flight"],
              ["how much money do i have", "balance"], ["get me a plane ticket", "book_flight"]],
    "val": [["balance please", "balance"], ["fly me to paris", "book_flight"]],
    "test": [["show my account balance", "balance"], ["a flight to tokyo", "book_flight"],
             ["i need a flight", "book_flight"]],
    "oos_train": [["who won the game", "oos"]], "oos_val": [["sing a song", "oos"]],
    "oos_test": [["what is the meaning of life", "oos"], ["tell me a joke", "oos"]],
}
DOMAINS = {"banking": ["balance"], "travel": ["book_flight"]}


def write(tmp_path: Path, domains: bool = True) -> Path:
    source = tmp_path / "data_full.json"
    source.write_text(json.dumps(FULL))
    if domains:
        (tmp_path / "domains.json").write_text(json.dumps(DOMAINS))
    return source


def test_data_full_is_mapped_to_domains_with_its_test_split(tmp_path: Path) -> None:
    data = load_dataset(write(tmp_path))
    assert list(data["domains"]) == ["banking", "travel"]
    assert data["splits"]["test"][0] == ["show my account balance", "balance", "banking"]
    assert data["oos"]["test"] == ["what is the meaning of life", "tell me a joke"]


def test_convert_writes_a_test_file_beside_val(tmp_path: Path) -> None:
    config, val = convert(write(tmp_path), tmp_path / "out", k=2)
    test = load_jsonl(tmp_path / "out" / "clinc150-test.jsonl")
    assert [(t.text, t.instance) for t in test] == [
        ("show my account balance", "banking"), ("a flight to tokyo", "travel"),
        ("i need a flight", "travel"), ("what is the meaning of life", None),
        ("tell me a joke", None)]
    assert len(load_jsonl(val)) == 3 and config.exists()


def test_data_full_without_domains_json_uses_the_shipped_domains(tmp_path: Path) -> None:
    data = load_dataset(write(tmp_path, domains=False))
    assert data["splits"]["test"][1] == ["a flight to tokyo", "book_flight", "travel"]
    assert len(data["domains"]) == 10  # the paper's ten domains, shipped with semproxy
    FULL["val"].append(["open the pod bay doors", "pod_bay"])
    try:
        with pytest.raises(ValueError, match=r"intents not in CLINC150: pod_bay"):
            load_dataset(write(tmp_path, domains=False))
    finally:
        FULL["val"].pop()


def test_an_unknown_layout_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text("{}")
    with pytest.raises(ValueError, match="neither"):
        load_dataset(other)
