"""A semantic route on the local model with topics far apart, so every answer is obvious."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

# CLINC150 is not shipped (CC BY 3.0, 24 MB): the tests that measure on it read this
# project's `clinc150_train_val.json` or CLINC's own `data_full.json`, and skip,
# saying how to get it, when neither is there.
CLINC150 = Path(os.environ.get("SEMPROXY_CLINC150") or
                Path(__file__).resolve().parents[2] / "../shared/data/clinc150_train_val.json")
CLINC150_MISSING = (f"CLINC150 not found at {CLINC150}: download data/data_full.json from "
                    "https://github.com/clinc/oos-eval (CC BY 3.0) and set "
                    "SEMPROXY_CLINC150=/path/to/data_full.json")

CONFIG = """\
# Tiny route for quality tests: three specialists and a catchall.
listen: 127.0.0.1:0
routes:
  - id: r1
    uri: /v1/chat/completions
    plugins:
      ai-proxy-multi:
        balancer: {algorithm: semantic, threshold: 0.3}  # keep this comment
        embeddings: {provider: local}
        instances:
          - name: code
            provider: echo
            weight: 1
            examples:
              - write a python function that sorts a list
              - fix the bug in my javascript code
          - name: cooking
            provider: echo
            weight: 1
            threshold: 0.25  # an explicit one
            examples:
              - give me a recipe for tomato soup
              - how long should i bake bread in the oven
          - name: weather
            provider: echo
            weight: 1
            examples:
              - will it rain tomorrow
              - what is the weather forecast for the weekend
          - name: general
            provider: echo
            weight: 1
            catchall: true
"""

LABELLED = [
    {"prompt": "write a python function to reverse a string", "instance": "code"},
    {"prompt": "fix this bug in my python code", "instance": "code"},
    {"prompt": "a recipe for chocolate cake please", "instance": "cooking"},
    {"messages": [{"role": "system", "content": "be brief"},
                  {"role": "user", "content": "how long do i bake a cake in the oven"}],
     "instance": "cooking"},
    {"prompt": "is it going to rain this weekend", "instance": "weather"},
    {"prompt": "what is the weather forecast for tomorrow", "instance": "weather"},
]


@pytest.fixture
def config_text() -> str:
    return CONFIG


@pytest.fixture
def config_dict() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CONFIG)
    return data
