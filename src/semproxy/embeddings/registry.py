"""The in-process models `embeddings: {provider: local, model: NAME}` can name.

Config load looks a name up here (an unknown name, or a model whose package is
not installed, is a config error on `...embeddings.model`); the embedder pool
builds the embedder from the same entry. Both modules import only numpy at
load: the models themselves load on first use.

`fast` is another name for the default wordllama. `accurate` is a cascade:
its embedder is wordllama too (the fast stage), and `strong` builds the
second stage, all-MiniLM-L6-v2 with int8 weights in its own worker thread
(embeddings/cascade.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from semproxy.embeddings import Embedder, minilm, minilm_onnx
from semproxy.embeddings.local import LocalEmbedder
from semproxy.embeddings.strong import StrongEmbedder


@dataclass(frozen=True, slots=True)
class LocalModel:
    build: Callable[[], Embedder]
    missing: Callable[[], str | None]  # why the model cannot run here, or None
    cached: bool  # worth a prompt-vector cache in front (it is when embedding is slow)
    strong: Callable[[], StrongEmbedder] | None = None  # the cascade's second stage, if any


def _always_present() -> str | None:
    return None  # wordllama is a core dependency, weights in its wheel


DEFAULT_LOCAL_MODEL = "wordllama"
FAST_MODEL = "fast"
ACCURATE_MODEL = "accurate"
LOCAL_MODELS: dict[str, LocalModel] = {
    DEFAULT_LOCAL_MODEL: LocalModel(LocalEmbedder, _always_present, cached=False),
    FAST_MODEL: LocalModel(LocalEmbedder, _always_present, cached=False),
    ACCURATE_MODEL: LocalModel(LocalEmbedder, minilm_onnx.missing_requirement, cached=False,
                               strong=minilm_onnx.strong_embedder),
    minilm.MODEL_NAME: LocalModel(minilm.MiniLMEmbedder, minilm.missing_requirement, cached=True),
}
