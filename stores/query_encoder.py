"""A query tower trained apart from the passages' encoder (REPLUG-LSR's, `activerag
train-retriever`) and the store that searches the passages with it."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document

from activerag.errors import ActiveRagError, CorpusError, ModelFileMissing
from activerag.stores.chroma import ChromaStore
from activerag.stores.embedding import unit_vectors

INDEX_FOLDER = "index"
"""Where a query encoder folder keeps the passages it re-embedded, as a Chroma collection."""


class QueryEncoder:
    """A query tower trained apart from the passages' encoder (REPLUG-LSR, `activerag
    train-retriever`): a sentence-transformers folder whose vectors search a collection that
    keeps its MiniLM passage embeddings."""

    def __init__(self, path: Path) -> None:
        if not path.is_dir():
            raise ModelFileMissing(f"the query encoder folder {path} does not exist; train one "
                                   "with `activerag train-retriever --out DIR` or fix the path")
        if not (path / "config.json").exists() and not (path / "modules.json").exists():
            raise ModelFileMissing(f"{path} holds no sentence-transformers model (no "
                                   "modules.json or config.json); point --query-encoder at the "
                                   "folder `activerag train-retriever --out` wrote")
        self.path = path
        self._model: Any = None
        self._lock = threading.Lock()

    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self.path), device="cpu")
            return self._model

    def dimension(self) -> int:
        return encoder_dimension(self.model())

    def index(self) -> ChromaStore | None:
        """The passages re-embedded by this tower (`train-retriever --reembed-every`), which it
        searches instead of the store's collection; None when it shares the store's."""
        folder = self.path / INDEX_FOLDER
        return ChromaStore(folder) if folder.is_dir() else None

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors of TEXTS."""
        return unit_vectors(self.model(), texts)


class EncodedQueryStore:
    """The Chroma store searched with a separate query encoder (checked against the stored
    dimension on first use), or the encoder's own re-embedded copy of it."""

    def __init__(self, chroma: ChromaStore, encoder: QueryEncoder) -> None:
        self.source = chroma
        self.encoder = encoder
        self.chroma = encoder.index() or chroma
        self._checked = False

    def add(self, docs: list[Document]) -> int:
        if self.chroma is not self.source:
            raise CorpusError(f"{self.encoder.path} searches its own re-embedded copy of the "
                              "passages, which new passages cannot join; ingest into the store "
                              "and train the encoder again")
        return self.chroma.add(docs)

    def check(self) -> None:
        if not self._checked:
            if self.chroma is not self.source and len(self.chroma) != len(self.source):
                raise CorpusError(
                    f"the query encoder {self.encoder.path} re-embedded {len(self.chroma)} "
                    f"passages but the store now holds {len(self.source)}; train it again on "
                    "this store (activerag train-retriever --reembed-every ...) or drop "
                    "--query-encoder")
            have, want = self.encoder.dimension(), self.chroma.dimension()
            if have != want:
                raise ActiveRagError(
                    f"the query encoder {self.encoder.path} makes {have}-dimensional vectors but "
                    f"the Chroma collection holds {want}-dimensional ones; train the encoder on "
                    "this store (activerag train-retriever --store ...) or drop --query-encoder")
            self._checked = True

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        self.check()
        if not query.strip():
            return []
        hits = self.chroma.search_vectors(self.encoder.encode([query]), k)[0]
        return [(d, s) for d, s, _ in hits]

    def __len__(self) -> int:
        return len(self.chroma)


def encoder_dimension(model: Any) -> int:
    """A sentence-transformers model's vector length (the method's name changed in v5)."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())
