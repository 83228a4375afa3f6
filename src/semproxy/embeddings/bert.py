"""A BERT encoder forward pass in numpy, for inference only.

Enough of BERT to run sentence-transformers checkpoints such as
all-MiniLM-L6-v2 without torch: word + position + token-type embeddings, then
post-LayerNorm encoder layers of multi-head self-attention and a GELU
feed-forward block. No dropout (inference), absolute positions, one segment.
Everything is float32, the precision the weights ship in.

This module imports nothing else of semproxy: it is pure math, tested against
reference vectors produced by the torch implementation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
Ids = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

# Abramowitz & Stegun 7.1.26: erf(x) = 1 - poly(t) * exp(-x^2), t = 1 / (1 + p x),
# for x >= 0, absolute error below 1.5e-7. numpy has no erf and scipy would be a
# 40 MB dependency for one function; at this accuracy the GELU below differs from
# the exact one by less than float32 rounding of its own inputs.
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741,
                                       -1.453152027, 1.061405429))
_SQRT_HALF = np.float32(math.sqrt(0.5))

# Added to the attention scores of padding positions. Finite, so a row is never
# all -inf (NaN after softmax); exp(-1e9 - max) is exactly 0 in float32.
_MASKED = np.float32(-1e9)


def erf(x: F32) -> F32:
    """The error function, elementwise (odd; erf(0) = 0, erf(inf) = 1)."""
    a = np.abs(x)
    t = 1 / (1 + _ERF_P * a)
    poly = t * (_ERF_A[0] + t * (_ERF_A[1] + t * (_ERF_A[2] + t * (_ERF_A[3] + t * _ERF_A[4]))))
    return np.asarray(np.copysign(1 - poly * np.exp(-a * a), x), dtype=np.float32)


def gelu(x: F32) -> F32:
    """GELU in its exact (erf) form, the `gelu` of BERT checkpoints, not the tanh one."""
    return np.asarray(x * np.float32(0.5) * (1 + erf(x * _SQRT_HALF)), dtype=np.float32)


def layer_norm(x: F32, gain: F32, bias: F32, eps: float) -> F32:
    """Normalise the last axis to mean 0, variance 1 (biased variance, as torch), then scale."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return np.asarray(centred / np.sqrt(var + np.float32(eps)) * gain + bias, dtype=np.float32)


def softmax(x: F32) -> F32:
    """Softmax over the last axis; subtracting the row maximum keeps exp in range."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.asarray(e / e.sum(axis=-1, keepdims=True), dtype=np.float32)


@dataclass(frozen=True, slots=True)
class BertLayer:
    """One encoder layer; each matrix is (in, out), so `x @ w` is the linear map."""

    qkv: F32  # (hidden, 3 * hidden): query (pre-scaled), key and value side by side
    qkv_bias: F32
    attn_out: F32
    attn_out_bias: F32
    attn_norm: tuple[F32, F32]
    ff_in: F32  # (hidden, intermediate)
    ff_in_bias: F32
    ff_out: F32  # (intermediate, hidden)
    ff_out_bias: F32
    ff_norm: tuple[F32, F32]


@dataclass(frozen=True, slots=True)
class BertWeights:
    words: F32  # (vocab, hidden)
    positions: F32  # (max_positions, hidden)
    segment: F32  # (hidden,): token type 0, the only one a single sentence uses
    norm: tuple[F32, F32]
    layers: tuple[BertLayer, ...]
    heads: int
    eps: float

    @property
    def hidden(self) -> int:
        return int(self.words.shape[1])

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, npt.NDArray[np.generic]], layers: int,
                     heads: int, eps: float) -> BertWeights:
        """From a Hugging Face `BertModel` state dict (names as in its safetensors file).

        Raises KeyError for a missing tensor and ValueError for a wrong shape.
        """
        def get(name: str) -> F32:
            return np.asarray(tensors[name], dtype=np.float32)  # a view when already float32

        emb = "embeddings."
        words = get(emb + "word_embeddings.weight")
        hidden = words.shape[1]
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of {heads} heads")
        return cls(
            words=words,
            positions=get(emb + "position_embeddings.weight"),
            segment=get(emb + "token_type_embeddings.weight")[0].copy(),
            norm=(get(emb + "LayerNorm.weight"), get(emb + "LayerNorm.bias")),
            layers=tuple(_layer(get, f"encoder.layer.{i}.", hidden, heads)
                         for i in range(layers)),
            heads=heads, eps=eps,
        )


def _layer(get: Callable[[str], F32], prefix: str, hidden: int, heads: int) -> BertLayer:
    # torch's nn.Linear stores (out, in); `.T` is a free view, and matmul hands a
    # transposed operand to BLAS as such, so the weights are never copied. Only
    # the fused query/key/value matrix is new, with the 1/sqrt(head_dim)
    # attention scale folded into its query part.
    scale = np.float32(1 / math.sqrt(hidden // heads))
    att = prefix + "attention."
    q, k, v = (get(f"{att}self.{n}.weight") for n in ("query", "key", "value"))
    qb, kb, vb = (get(f"{att}self.{n}.bias") for n in ("query", "key", "value"))
    layer = BertLayer(
        qkv=np.concatenate([q * scale, k, v]).T,
        qkv_bias=np.concatenate([qb * scale, kb, vb]),
        attn_out=get(att + "output.dense.weight").T,
        attn_out_bias=get(att + "output.dense.bias"),
        attn_norm=(get(att + "output.LayerNorm.weight"), get(att + "output.LayerNorm.bias")),
        ff_in=get(prefix + "intermediate.dense.weight").T,
        ff_in_bias=get(prefix + "intermediate.dense.bias"),
        ff_out=get(prefix + "output.dense.weight").T,
        ff_out_bias=get(prefix + "output.dense.bias"),
        ff_norm=(get(prefix + "output.LayerNorm.weight"), get(prefix + "output.LayerNorm.bias")),
    )
    if layer.qkv.shape != (hidden, 3 * hidden) or layer.ff_out.shape[1] != hidden:
        raise ValueError(f"{prefix}: weight shapes do not match hidden size {hidden}")
    return layer


def encode(w: BertWeights, ids: Ids, mask: Mask) -> F32:
    """Hidden states (batch, tokens, hidden) of padded token ids; `mask` is False on padding."""
    batch, tokens = ids.shape
    if tokens > w.positions.shape[0]:
        raise ValueError(f"{tokens} tokens, the model has {w.positions.shape[0]} positions")
    x = w.words[ids] + w.positions[:tokens] + w.segment
    # Rows of every text side by side, (batch * tokens, hidden): each linear map is
    # one matrix product instead of one per text.
    x = layer_norm(x.reshape(batch * tokens, w.hidden), *w.norm, w.eps)
    bias = np.where(mask, np.float32(0), _MASKED)[:, None, None, :]  # (batch, 1, 1, keys)
    for layer in w.layers:
        x = _encoder_layer(x, layer, bias, w.heads, w.eps)
    return x.reshape(batch, tokens, w.hidden)


def _encoder_layer(x: F32, layer: BertLayer, bias: F32, heads: int, eps: float) -> F32:
    batch, _, _, tokens = bias.shape
    hidden = x.shape[1]
    qkv = (x @ layer.qkv + layer.qkv_bias).reshape(batch, tokens, 3, heads, hidden // heads)
    q, k, v = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, heads, tokens, head_dim)
    weights = softmax(q @ k.transpose(0, 1, 3, 2) + bias)
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch * tokens, hidden)
    x = layer_norm(x + context @ layer.attn_out + layer.attn_out_bias, *layer.attn_norm, eps)
    inner = gelu(x @ layer.ff_in + layer.ff_in_bias)
    return layer_norm(x + inner @ layer.ff_out + layer.ff_out_bias, *layer.ff_norm, eps)


def mean_pool(hidden: F32, mask: Mask) -> F32:
    """Mean of each row's real (unmasked) token states: sentence-transformers' mean pooling."""
    weights = mask.astype(np.float32)[:, :, None]
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    return np.asarray((hidden * weights).sum(axis=1) / counts, dtype=np.float32)


def l2_normalize(x: F32) -> F32:
    """Rows scaled to unit length; a zero row stays zero (as torch's F.normalize)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)
