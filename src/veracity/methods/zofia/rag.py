"""The claim verifier's small RAG (section 4.1.3, Eq. 9).

The open-web results (snippets and summaries) are cut into chunks and embedded once per
check; for each claim the top-k chunks by cosine similarity are kept if their similarity
is at least θ_sim.
"""

from __future__ import annotations

import numpy as np

from veracity.core.types import Document
from veracity.nlp.embeddings import Embedder
from veracity.nlp.text import chunk_text


class ClaimRAG:
    """Chunk index over retrieved documents.

    Args:
        documents: the open-web corpus.
        embedder: sentence embedder (unit-length rows).
        top_k: chunks considered per claim.
        theta_sim: minimum cosine similarity θ_sim.
        chunk_words: chunk size in words.
    """

    def __init__(
        self,
        documents: list[Document],
        embedder: Embedder,
        *,
        top_k: int = 5,
        theta_sim: float = 0.1,
        chunk_words: int = 80,
    ):
        self.embedder = embedder
        self.top_k = top_k
        self.theta_sim = theta_sim
        self.chunks: list[Document] = []
        for doc in documents:
            body = f"{doc.title}. {doc.text}" if doc.title else doc.text
            for chunk in chunk_text(body, max_words=chunk_words):
                self.chunks.append(
                    doc.model_copy(
                        update={
                            "id": f"{doc.id}#{chunk.index}",
                            "text": chunk.text,
                            "metadata": {**doc.metadata, "parent_id": doc.id},
                        }
                    )
                )
        self._vectors = (
            embedder.embed([c.text for c in self.chunks]) if self.chunks else np.zeros((0, 1))
        )

    def relevant(self, claim: str) -> list[Document]:
        """Chunks among the top-k most similar to `claim` with similarity ≥ θ_sim."""
        if not self.chunks:
            return []
        query = self.embedder.embed([claim])[0]
        sims = self._vectors @ query
        order = np.argsort(-sims)[: self.top_k]
        return [
            self.chunks[i].model_copy(update={"score": float(sims[i])})
            for i in order
            if sims[i] >= self.theta_sim
        ]
