"""A BERT sentence encoder in NumPy, for a few short texts without importing torch.

`veracity index search` embeds one query; loading torch and sentence-transformers for
that takes seconds of CPU, the forward pass itself milliseconds. `NumpySentenceEncoder`
runs the same computation as sentence-transformers for the common model layout — a BERT
encoder, mean pooling over the tokens, L2 normalisation (all-MiniLM-L6-v2 and many
others) — from the model folder's ``model.safetensors`` and ``tokenizer.json``, so its
vectors match the torch model's to float32 rounding (tests/unit/test_bert_numpy.py).
Other layouts are declined (`load` returns None) and the caller uses torch.
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


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # BERT's exact (erf) GELU, not the tanh approximation

    return 0.5 * x * (1.0 + erf(x / _SQRT2))


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
    """Mean-pooled, normalised BERT embeddings computed with NumPy (see module docs)."""

    def __init__(self, folder: Path, config: dict[str, Any]):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.config = config
        self.max_length = min(int(config["max_seq_length"]), config["max_position_embeddings"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()
        weights = load_file(str(folder / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v for k, v in weights.items()}

    @classmethod
    def load(cls, folder: Path) -> NumpySentenceEncoder | None:
        """An encoder for the model in `folder`, or None when its layout is not supported."""
        config = _supported(folder)
        return cls(folder, config) if config is not None else None

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), hidden) float32 rows of unit length."""
        return np.stack([self._one(t) for t in texts]).astype(np.float32)

    def _one(self, text: str) -> np.ndarray:
        ids = np.asarray(self.tokenizer.encode(text).ids)
        w, eps = self.w, self.config["layer_norm_eps"]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for i in range(self.config["num_hidden_layers"]):
            x = self._layer(x, f"encoder.layer.{i}.", eps)
        pooled = x.mean(axis=0)  # one text, no padding: every token counts
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _layer(self, x: np.ndarray, p: str, eps: float) -> np.ndarray:
        heads = self.config["num_attention_heads"]
        n, hidden = x.shape
        size = hidden // heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(n, heads, size).transpose(1, 0, 2)

        q = split(self._dense(x, p + "attention.self.query"))
        k = split(self._dense(x, p + "attention.self.key"))
        v = split(self._dense(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(1, 0, 2).reshape(n, hidden)
        ln = p + "attention.output.LayerNorm"
        attn = self._dense(context, p + "attention.output.dense") + x
        x = _layer_norm(attn, self.w[ln + ".weight"], self.w[ln + ".bias"], eps)
        inner = _gelu(self._dense(x, p + "intermediate.dense"))
        ln = p + "output.LayerNorm"
        out = self._dense(inner, p + "output.dense") + x
        return _layer_norm(out, self.w[ln + ".weight"], self.w[ln + ".bias"], eps)
