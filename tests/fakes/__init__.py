"""Real-socket test doubles for semproxy's upstreams (they never import semproxy)."""

from .anthropic import FakeAnthropic
from .common import FakeServer, RecordedRequest
from .embeddings import DEFAULT_AXES, FakeEmbeddings
from .llm import FakeLLM

__all__ = ["DEFAULT_AXES", "FakeAnthropic", "FakeEmbeddings", "FakeLLM", "FakeServer",
           "RecordedRequest"]
