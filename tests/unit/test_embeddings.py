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
