"""The CLINC150 converter on a small slice of the shared data set (skipped without it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from semproxy.config.loader import load_file
from semproxy.quality.clinc150 import (
    CATCHALL,
    by_typicality,
    convert,
    domain_examples,
    load_dataset,
    route_config,
)

from .conftest import CLINC150, CLINC150_MISSING

DATA = CLINC150
pytestmark = pytest.mark.skipif(not DATA.exists(), reason=CLINC150_MISSING)


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    full = load_dataset(DATA)  # either layout
    keep = ["banking", "travel"]
    return {"domains": {d: full["domains"][d] for d in keep},
            "splits": {s: [r for r in rows if r[2] in keep][:: 20]
                       for s, rows in full["splits"].items()},
            "oos": {s: texts[:5] for s, texts in full["oos"].items()}}


def test_examples_cover_every_intent_before_repeating_one(small: dict[str, Any]) -> None:
    import random

    picked = domain_examples(small, "banking", 15, random.Random(0))
    intents = {t: i for t, i, _ in small["splits"]["train"]}
    assert len(picked) == 15 and len({intents[t] for t in picked}) == 15


def test_convert_writes_a_loadable_route_and_labelled_val(small: dict[str, Any],
                                                          tmp_path: Path) -> None:
    source = tmp_path / "slice.json"
    source.write_text(json.dumps(small))
    config_path, data_path = convert(source, tmp_path / "out", k=4, seed=0)
    config = load_file(config_path)
    route = config.routes[0]
    assert [i.name for i in route.instances] == ["banking", "travel", CATCHALL]
    assert [len(i.examples) for i in route.instances] == [4, 4, 0]
    assert route.semantic is not None and route.semantic.catchall == CATCHALL
    assert config_path.read_text().startswith("# CLINC150")
    lines = [json.loads(x) for x in data_path.read_text().splitlines()]
    assert len(lines) == len(small["splits"]["val"]) + 5
    assert {x["instance"] for x in lines} == {"banking", "travel", None}


def test_same_seed_same_route(small: dict[str, Any]) -> None:
    assert route_config(small, 4, 3, "max", False) == route_config(small, 4, 3, "max", False)
    assert route_config(small, 4, 3, "max", False) != route_config(small, 4, 4, "max", False)


def test_convert_defaults_to_the_local_centroid_with_four_nearest(
        small: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "slice.json"
    source.write_text(json.dumps(small))
    config_path, _ = convert(source, tmp_path / "out", k=4, seed=0)
    semantic = load_file(config_path).routes[0].semantic
    assert semantic is not None
    assert (semantic.aggregation, semantic.k, semantic.center) == ("max_local_centroid", 4, True)
    # An aggregation that ignores k does not get one written.
    config_path, _ = convert(source, tmp_path / "max", k=4, aggregation="max_centroid")
    raw = yaml.safe_load(config_path.read_text())
    assert "k" not in raw["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]


def test_convert_writes_the_chosen_local_model(small: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "slice.json"
    source.write_text(json.dumps(small))

    def embeddings(config_path: Path) -> Any:
        return yaml.safe_load(config_path.read_text())["routes"][0]["plugins"][
            "ai-proxy-multi"]["embeddings"]

    default, _ = convert(source, tmp_path / "default", k=4)
    minilm, _ = convert(source, tmp_path / "minilm", k=4, model="all-MiniLM-L6-v2")
    assert embeddings(default) == {"provider": "local", "model": "wordllama"}
    assert embeddings(minilm) == {"provider": "local", "model": "all-MiniLM-L6-v2"}


def test_typicality_orders_phrases_by_cosine_to_their_mean_direction() -> None:
    # a=(1, 0), b=(0.6, 0.8), c=(0, 2) normalised to (0, 1): the mean is (0.53, 0.6), so
    # the cosines to it rank b (0.8) before c (0.6) before a (0.53).
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0]])
    assert by_typicality(["a", "b", "c"], vectors) == ["b", "c", "a"]


def test_typical_picks_ignore_the_seed_and_cover_every_intent(small: dict[str, Any]) -> None:
    def embed(texts: Sequence[str]) -> np.ndarray:
        # A fixed fake: the vector of a phrase is its length and its count of "a".
        return np.array([[len(t), t.count("a") + 1.0] for t in texts])

    first = route_config(small, 15, 0, "max", False, pick="typical", embed=embed)
    assert first == route_config(small, 15, 7, "max", False, pick="typical", embed=embed)
    picked = first["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["examples"]
    intents = {t: i for t, i, _ in small["splits"]["train"]}
    assert len(picked) == 15 and len({intents[t] for t in picked}) == 15
    # Each intent's pick is the phrase closest to that intent's mean direction.
    pools = [[t for t, i, _ in small["splits"]["train"] if i == intent]
             for intent in sorted(small["domains"]["banking"])]
    assert picked == [by_typicality(pool, embed(pool))[0] for pool in pools if pool][:15]


def test_unknown_pick_is_refused(small: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="unknown pick"):
        route_config(small, 4, 0, "max", False, pick="best")


def test_convert_with_typical_picks_uses_the_local_model(small: dict[str, Any],
                                                         tmp_path: Path) -> None:
    source = tmp_path / "slice.json"
    source.write_text(json.dumps(small))
    config_path, _ = convert(source, tmp_path / "typical", k=4, pick="typical")
    again, _ = convert(source, tmp_path / "again", k=4, seed=5, pick="typical")
    assert "most typical of each intent first" in config_path.read_text()
    assert yaml.safe_load(config_path.read_text()) == yaml.safe_load(again.read_text())


def test_without_the_data_the_tests_skip_saying_how_to_get_it(tmp_path: Path) -> None:
    env = {**os.environ, "SEMPROXY_CLINC150": str(tmp_path / "absent.json")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(Path(__file__).with_name("test_conversation_floor.py")), __file__,
                           "-k", "not how_to_get_it"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert done.returncode == 0 and skipped, done.stdout
    assert all("github.com/clinc/oos-eval" in line and "SEMPROXY_CLINC150" in line
               for line in skipped), skipped
