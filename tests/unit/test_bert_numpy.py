"""The NumPy BERT encoder gives the sentence-transformers vectors without torch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from veracity.nlp.bert_numpy import NumpySentenceEncoder
from veracity.nlp.embeddings import DEFAULT_MODEL, SentenceTransformerEmbedder, resolve_model_path

TEXTS = [
    "vaccine trial",
    "The Eiffel Tower is in Berlin.",
    "Ünïcode — naïve café, 42% of U.S. adults said so!",
    "word " * 400,  # past max_seq_length: truncated as sentence-transformers does
]


def test_unsupported_model_folders_are_declined(tmp_path):
    assert NumpySentenceEncoder.load(tmp_path) is None
    (tmp_path / "modules.json").write_text(json.dumps([{"type": "x.Transformer"}]))
    assert NumpySentenceEncoder.load(tmp_path) is None


@pytest.mark.nlp
def test_vectors_match_sentence_transformers():
    light = NumpySentenceEncoder.load(resolve_model_path(DEFAULT_MODEL))
    assert light is not None
    ours = light.encode(TEXTS)
    torch_model = SentenceTransformerEmbedder()
    torch_model._load()  # force the torch path for the reference vectors
    reference = torch_model.embed(TEXTS)
    assert ours.shape == reference.shape and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


PROBE = """
import sys, json
from veracity.nlp.embeddings import get_embedder
vector = get_embedder().embed(["vaccine trial results"])[0]
print(json.dumps({"torch": "torch" in sys.modules, "dim": len(vector)}))
"""


@pytest.mark.nlp
def test_a_query_is_embedded_without_loading_torch():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"torch": False, "dim": 384}
