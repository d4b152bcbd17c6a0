"""A BERT sentence encoder in NumPy: sentence embeddings without torch.

`NumpySentenceEncoder` runs the same computation as sentence-transformers for the common
model layout — a BERT encoder, mean pooling over the tokens, L2 normalisation
(all-MiniLM-L6-v2 and many others) — from the model folder's ``model.safetensors`` and
``tokenizer.json``, so its vectors match the torch model's to float32 rounding
(tests/unit/test_bert_numpy.py). It embeds one search query in milliseconds (loading torch
for that takes seconds) and, batched, whole corpora for `veracity index build`; so the
core install needs no torch. Other layouts are declined (`load` returns None) and the
caller uses sentence-transformers, when the ``torch`` extra is installed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

_SQRT2 = math.sqrt(2.0)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


# erf by Abramowitz and Stegun's 7.1.26 (|error| < 1.5e-7, below float32's resolution of
# the GELU's result): NumPy has no erf, and scipy's (15 ns a value here) is no faster
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(
    np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU, x·Φ(x), not the tanh approximation; overwrites `x`."""
    z = np.abs(x)
    z *= np.float32(1.0 / _SQRT2)
    tail = np.multiply(z, z)
    np.negative(tail, out=tail)
    np.exp(tail, out=tail)  # exp(-z²)
    z *= _ERF_P
    z += np.float32(1.0)
    np.reciprocal(z, out=z)  # t = 1 / (1 + p·z)
    poly = z * _ERF_A[0]
    for a in _ERF_A[1:]:
        poly += a
        poly *= z
    poly *= tail  # 1 − erf(z)
    poly *= np.float32(-0.5)
    poly += np.float32(0.5)  # erf(|x|/√2) / 2
    np.copysign(poly, x, out=poly)
    poly += np.float32(0.5)  # Φ(x)
    x *= poly
    return x


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _supported(folder: Path) -> dict[str, Any] | None:
    """The model's settings when it is a BERT + mean pooling + normalise model, else None."""
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in _read_json(folder / "modules.json")]
        config = _read_json(folder / "config.json")
        pooling = _read_json(folder / "1_Pooling" / "config.json")
        st_config = _read_json(folder / "sentence_bert_config.json")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    wanted = ["Transformer", "Pooling", "Normalize"]
    mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
        pooling.get(k)
        for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                  "pooling_mode_mean_sqrt_len_tokens")
    )  # fmt: skip
    plain_bert = (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
    )
    files = all((folder / f).is_file() for f in ("model.safetensors", "tokenizer.json"))
    if modules != wanted or not mean_only or not plain_bert or not files:
        return None
    return {**config, "max_seq_length": st_config.get("max_seq_length", 512)}


class NumpySentenceEncoder:
    """Mean-pooled, normalised BERT embeddings computed with NumPy (see module docs).

    `encode` runs its texts as one padded batch: each text is padded to the longest, an
    attention mask keeps the padding out of every softmax and out of the mean, and every
    layer is a few large matrix products over the whole batch. A caller with many texts of
    mixed lengths groups them first (`veracity.nlp.embeddings.length_batches`), so that
    little work goes into padding.
    """

    def __init__(self, folder: Path, config: dict[str, Any]):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.config = config
        self.max_length = min(int(config["max_seq_length"]), config["max_position_embeddings"])
        self.dim = int(config["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()
        weights = load_file(str(folder / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v for k, v in weights.items()}
        # x @ W.T with W stored (out, in): keep each dense weight transposed and contiguous
        # once, so that every product is a plain row-major GEMM; the query, key and value
        # projections of a layer become one product with their weights side by side
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            names = [p + f"attention.self.{m}" for m in ("query", "key", "value")]
            self.w[p + "qkv.weight"] = np.concatenate([self.w[n + ".weight"] for n in names]).T
            self.w[p + "qkv.bias"] = np.concatenate([self.w[n + ".bias"] for n in names])
            self.w[p + "qkv.weight"] = np.ascontiguousarray(self.w[p + "qkv.weight"])
            for dense in ("attention.output.dense", "intermediate.dense", "output.dense"):
                name = p + dense + ".weight"
                self.w[name] = np.ascontiguousarray(self.w[name].T)

    @classmethod
    def load(cls, folder: Path) -> NumpySentenceEncoder | None:
        """An encoder for the model in `folder`, or None when its layout is not supported."""
        config = _supported(folder)
        return cls(folder, config) if config is not None else None

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Word-piece ids of each text as the model sees it (special tokens, truncation)."""
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), hidden) float32 rows of unit length, the texts run as one batch."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.encode_ids(self.token_ids(texts))

    def encode_ids(self, ids: list[list[int]]) -> np.ndarray:
        """`encode` for texts already tokenised (`token_ids`)."""
        n = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), n), dtype=np.int64)  # pad id 0; masked out below
        mask = np.zeros((len(ids), n), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        w, eps = self.w, self.config["layer_norm_eps"]
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        x = x.reshape(len(ids) * n, self.dim)  # tokens as rows: each dense layer one GEMM
        # a large negative score for padded keys: exp() makes their weight exactly 0
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for i in range(self.config["num_hidden_layers"]):
            x = self._layer(x, bias, f"encoder.layer.{i}.", eps)
        x = x.reshape(len(ids), n, self.dim)
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        out = x @ self.w[f"{name}.weight"]
        out += self.w[f"{name}.bias"]
        return out

    def _layer(self, x: np.ndarray, bias: np.ndarray, p: str, eps: float) -> np.ndarray:
        """One encoder layer over `x`, (batch × tokens, hidden) rows."""
        heads = self.config["num_attention_heads"]
        b, n = bias.shape[0], bias.shape[-1]
        hidden = x.shape[1]
        size = hidden // heads
        # (b·n, 3·hidden) -> three (b, heads, n, size) views
        q, k, v = self._dense(x, p + "qkv").reshape(b, n, 3, heads, size).transpose(2, 0, 3, 1, 4)
        q = q * np.float32(1.0 / math.sqrt(size))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += bias
        scores -= scores.max(-1, keepdims=True)
        np.exp(scores, out=scores)
        total = scores.sum(-1, keepdims=True)
        context = scores @ v
        context /= total  # the softmax's division, on the smaller array
        context = context.transpose(0, 2, 1, 3).reshape(b * n, hidden)
        ln = p + "attention.output.LayerNorm"
        attn = self._dense(context, p + "attention.output.dense")
        attn += x
        x = _layer_norm(attn, self.w[ln + ".weight"], self.w[ln + ".bias"], eps)
        inner = _gelu(self._dense(x, p + "intermediate.dense"))
        ln = p + "output.LayerNorm"
        out = self._dense(inner, p + "output.dense")
        out += x
        return _layer_norm(out, self.w[ln + ".weight"], self.w[ln + ".bias"], eps)
