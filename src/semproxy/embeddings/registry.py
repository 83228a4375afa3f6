"""The in-process models `embeddings: {provider: local, model: NAME}` can name.

Config load looks a name up here (an unknown name, or a model whose package is
not installed, is a config error on `...embeddings.model`); the embedder pool
builds the embedder from the same entry. Both modules import only numpy at
load: the models themselves load on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from semproxy.embeddings import Embedder, minilm
from semproxy.embeddings.local import LocalEmbedder


@dataclass(frozen=True, slots=True)
class LocalModel:
    build: Callable[[], Embedder]
    missing: Callable[[], str | None]  # why the model cannot run here, or None
    cached: bool  # worth a prompt-vector cache in front (it is when embedding is slow)


def _always_present() -> str | None:
    return None  # wordllama is a core dependency, weights in its wheel


DEFAULT_LOCAL_MODEL = "wordllama"
LOCAL_MODELS: dict[str, LocalModel] = {
    DEFAULT_LOCAL_MODEL: LocalModel(LocalEmbedder, _always_present, cached=False),
    minilm.MODEL_NAME: LocalModel(minilm.MiniLMEmbedder, minilm.missing_requirement, cached=True),
}
