"""A semantic route on the local model with topics far apart, so every answer is obvious."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

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
