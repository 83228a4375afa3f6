"""The BERT encoder of `bert.py` as an ONNX graph with int8 weights, for ONNX Runtime.

`build_graph` turns loaded `BertWeights` into a serialized ONNX model whose
linear maps are `com.microsoft.DynamicQuantizeMatMul` nodes: every weight
matrix is stored as int8 with one scale per output column (symmetric, so no
zero point is needed), and ONNX Runtime quantizes each activation matrix to
uint8 on the fly and runs an integer GEMM (VNNI where the CPU has it).

Why ONNX Runtime and not int8 in numpy: numpy has no integer BLAS; an int8
`@` runs a plain loop (hundreds of times slower than float32 sgemm), and
de-quantizing the weights before each product costs more than it saves, so
int8 in numpy is at best as fast as float32 (~5 ms per prompt here). ONNX
Runtime's integer GEMM is what makes the pass ~1 ms (docs/en/routing-quality.md
has the measured comparison).

Attention, softmax and layer norms stay float32. The graph takes the padded
token ids, their positions and the additive attention bias (0 for a real
token, -1e9 for padding) as inputs, and returns the hidden states; pooling is
the caller's (`bert.mean_pool`), as for the numpy pass.

This module needs the `onnx` package only to build the graph; it imports
nothing else of semproxy but `bert`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semproxy.embeddings.bert import F32, BertLayer, BertWeights

OPSET = 17  # LayerNormalization is an ONNX op from opset 17 on
MS_DOMAIN = "com.microsoft"


def quantize_columns(w: F32) -> tuple[np.ndarray, F32]:
    """Symmetric per-column int8 weights and their scales: w ~= q * scale.

    A column of zeros gets scale 1 (any scale represents it exactly), so the
    de-quantization never divides by zero.
    """
    peak = np.abs(w).max(axis=0)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


class _GraphBuilder:
    """Accumulates nodes and initializers; names are made unique by a counter."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._count = 0

    def name(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def const(self, stem: str, value: np.ndarray) -> str:
        name = self.name(stem)
        # np.array, not np.ascontiguousarray: the latter turns a 0-d index into shape (1,).
        self.inits.append(self.numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def op(self, kind: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        out = self.name(kind.lower())
        self.nodes.append(self.helper.make_node(kind, inputs, [out], name=out, domain=domain,
                                                   **attrs))
        return out

    def linear(self, x: str, w: F32, bias: F32, stem: str) -> str:
        q, scale = quantize_columns(w)
        zero = np.zeros(scale.shape, dtype=np.int8)
        return self.op("DynamicQuantizeMatMul",
                       [x, self.const(stem + "_q", q), self.const(stem + "_scale", scale),
                        self.const(stem + "_zero", zero), self.const(stem + "_bias", bias)],
                       domain=MS_DOMAIN)

    def layer_norm(self, x: str, norm: tuple[F32, F32], eps: float, stem: str) -> str:
        gain, bias = self.const(stem + "_gain", norm[0]), self.const(stem + "_bias", norm[1])
        return self.op("LayerNormalization", [x, gain, bias], axis=-1, epsilon=eps)


def _attention(g: _GraphBuilder, x: str, layer: BertLayer, bias: str, heads: int,
               hidden: int) -> str:
    """Multi-head self-attention of `x` (batch, tokens, hidden); query pre-scaled."""
    qkv = g.linear(x, layer.qkv, layer.qkv_bias, "qkv")
    split = g.op("Reshape", [qkv, g.const("shape", np.array([0, 0, 3, heads, hidden // heads]))])
    parts = g.op("Transpose", [split], perm=[2, 0, 3, 1, 4])  # (3, batch, heads, tokens, dim)
    q, k, v = (g.op("Gather", [parts, g.const("which", np.array(i))], axis=0) for i in range(3))
    keys = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    scores = g.op("Add", [g.op("MatMul", [q, keys]), bias])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    merged = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]),
                              g.const("shape", np.array([0, 0, hidden]))])
    return g.linear(merged, layer.attn_out, layer.attn_out_bias, "attn_out")


def _encoder_layer(g: _GraphBuilder, x: str, layer: BertLayer, bias: str, heads: int,
                   hidden: int, eps: float) -> str:
    attended = _attention(g, x, layer, bias, heads, hidden)
    x = g.layer_norm(g.op("Add", [x, attended]), layer.attn_norm, eps, "attn_norm")
    inner = g.op("Gelu", [g.linear(x, layer.ff_in, layer.ff_in_bias, "ff_in")], domain=MS_DOMAIN)
    out = g.linear(inner, layer.ff_out, layer.ff_out_bias, "ff_out")
    return g.layer_norm(g.op("Add", [x, out]), layer.ff_norm, eps, "ff_norm")


def build_graph(w: BertWeights) -> bytes:
    """The serialized int8 ONNX model of `w`.

    Inputs: `ids` int64 (batch, tokens), `positions` int64 (tokens,), `bias`
    float32 (batch, 1, 1, tokens). Output: `hidden` float32 (batch, tokens, hidden).
    """
    from onnx import TensorProto

    g = _GraphBuilder()
    h = g.helper
    words = g.op("Gather", [g.const("words", w.words), "ids"])
    positions = g.op("Gather", [g.const("positions", w.positions), "positions"])
    summed = g.op("Add", [g.op("Add", [words, positions]), g.const("segment", w.segment)])
    x = g.layer_norm(summed, w.norm, w.eps, "emb_norm")
    for layer in w.layers:
        x = _encoder_layer(g, x, layer, "bias", w.heads, w.hidden, w.eps)
    g.nodes.append(h.make_node("Identity", [x], ["hidden"]))
    graph = h.make_graph(
        g.nodes, "minilm_int8",
        [h.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "tokens"]),
         h.make_tensor_value_info("positions", TensorProto.INT64, ["tokens"]),
         h.make_tensor_value_info("bias", TensorProto.FLOAT, ["batch", 1, 1, "tokens"])],
        [h.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", w.hidden])],
        g.inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET),
                                               h.make_opsetid(MS_DOMAIN, 1)])
    model.ir_version = 8
    return bytes(model.SerializeToString())
