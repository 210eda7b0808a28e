"""Dense retrieval with Chroma: the store of the passages' MiniLM vectors (the encoder is
embedding.py's, a trained query tower query_encoder.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
from langchain_core.documents import Document

from activerag.errors import ActiveRagError, CorpusError
from activerag.stores.embedding import MiniLMEmbedding

COLLECTION = "activerag"


def _client(path: Path | None, url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https"):
            raise ActiveRagError(f"the Chroma server URL {url!r} (ACTIVERAG_CHROMA_URL or "
                                 "--chroma-url) is not an http(s) URL; give one such as "
                                 "http://127.0.0.1:8000")
        return chromadb.HttpClient(host=parsed.hostname or "127.0.0.1", port=parsed.port or 8000,
                                   ssl=parsed.scheme == "https", settings=settings)
    if path is None:
        return chromadb.EphemeralClient(settings=settings)
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class ChromaStore:
    """A Chroma collection searched by cosine similarity of MiniLM embeddings."""

    def __init__(self, path: Path | None = None, url: str | None = None,
                 collection: str = COLLECTION, embedding: MiniLMEmbedding | None = None) -> None:
        self.embedding = embedding or MiniLMEmbedding()
        try:
            self.client = _client(path, url)
            self.collection = self.client.get_or_create_collection(
                collection, embedding_function=self.embedding,  # type: ignore[arg-type]
                configuration={"hnsw": {"space": "cosine"}},
            )
        except ValueError as exc:
            where = url or path
            raise ActiveRagError(f"cannot open the Chroma store at {where}: {exc}") from exc

    def add(self, docs: list[Document], batch: int = 2048) -> int:
        """Embed and add documents whose ids are new; return how many were added.

        BATCH new documents are embedded in one call, so their texts are batched by token
        length across all of them (see unit_vectors), then written with their embeddings.
        """
        unique = list({d.id: d for d in docs if d.id}.values())
        added = 0
        for i in range(0, len(unique), batch):
            chunk = unique[i:i + batch]
            have = set(self.collection.get(ids=[d.id for d in chunk], include=[])["ids"])
            new = [d for d in chunk if d.id not in have]
            if not new:
                continue
            self.add_embedded(new, self.embedding([d.page_content for d in new]))
            added += len(new)
        return added

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """Top K passages by cosine similarity (1 - cosine distance)."""
        self._check_not_empty()
        if not query.strip():
            return []
        res = self.collection.query(query_texts=[query], n_results=k,
                                    include=["documents", "metadatas", "distances"])
        return [(d, s) for d, s, _ in _hits(res)[0]]

    def search_vectors(self, vectors: Any, k: int,
                       ) -> list[list[tuple[Document, float, np.ndarray]]]:
        """Top K passages for each query vector (unit length), with each passage's stored
        embedding: what a query encoder other than the collection's own searches with."""
        self._check_not_empty()
        res = self.collection.query(query_embeddings=[np.asarray(v, np.float32) for v in vectors],
                                    n_results=k,
                                    include=["documents", "metadatas", "distances", "embeddings"])
        return _hits(res)

    def embeddings(self, ids: list[str]) -> np.ndarray:
        """The stored embeddings of IDS, in that order (an id may repeat)."""
        res = self.collection.get(ids=list(dict.fromkeys(ids)), include=["embeddings"])
        by_id = dict(zip(res["ids"], res["embeddings"], strict=True))  # type: ignore[arg-type]
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise CorpusError(f"{len(missing)} passages are not in the Chroma store "
                              f"(e.g. {missing[0]}); was the corpus re-ingested?")
        return np.asarray([by_id[i] for i in ids], np.float32)

    def passages(self, batch: int = 5000) -> tuple[list[Document], np.ndarray]:
        """Every stored passage (id, text, title) and its embedding, in the collection's order."""
        self._check_not_empty()
        docs: list[Document] = []
        vectors: list[Any] = []
        for offset in range(0, len(self), batch):
            res = self.collection.get(limit=batch, offset=offset,
                                      include=["documents", "metadatas", "embeddings"])
            for i, text, meta, vector in zip(res["ids"], res["documents"] or [],  # type: ignore[arg-type]
                                             res["metadatas"] or [], res["embeddings"],
                                             strict=True):
                docs.append(Document(page_content=text or "", id=i, metadata=dict(meta or {})))
                vectors.append(vector)
        return docs, np.asarray(vectors, np.float32)

    def add_embedded(self, docs: list[Document], vectors: Any, batch: int = 1000) -> None:
        """Add DOCS with their embeddings VECTORS (the collection's own, or a trained tower's)."""
        for i in range(0, len(docs), batch):
            chunk = docs[i:i + batch]
            self.collection.add(
                ids=[d.id or "" for d in chunk],
                documents=[d.page_content for d in chunk],
                metadatas=[{"title": d.metadata.get("title", ""),
                            "source": d.metadata.get("source", "")} for d in chunk],
                embeddings=[np.asarray(v, np.float32) for v in vectors[i:i + batch]],
            )

    def dimension(self) -> int:
        """The length of the stored embeddings."""
        self._check_not_empty()
        res = self.collection.peek(limit=1)
        return len(res["embeddings"][0])  # type: ignore[index]

    def _check_not_empty(self) -> None:
        if len(self) == 0:
            raise CorpusError("the Chroma store is empty; ingest a corpus first "
                              "(activerag ingest PATH)")

    def __len__(self) -> int:
        return int(self.collection.count())


def _hits(res: Any) -> list[list[tuple[Document, float, Any]]]:
    """Chroma's query result as (document, cosine similarity, embedding or None) per query."""
    out = []
    embeddings = res.get("embeddings")
    for q, ids in enumerate(res["ids"]):
        hits = []
        for j, pid in enumerate(ids):
            meta = res["metadatas"][q][j] or {}
            doc = Document(page_content=res["documents"][q][j], id=pid,
                           metadata={"id": pid, "title": meta.get("title", ""),
                                     "source": meta.get("source", "")})
            vector = None if embeddings is None else np.asarray(embeddings[q][j], np.float32)
            hits.append((doc, 1.0 - float(res["distances"][q][j]), vector))
        out.append(hits)
    return out
