"""The dense store's edges, with a tiny stand-in encoder instead of MiniLM: a Chroma server's
URL reaches the client whole, a collection reports its vectors' length, and a store searched
with a trained query encoder adds passages and searches with that encoder's vectors."""

from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document

from activerag.errors import CorpusError
from activerag.stores import chroma
from activerag.stores.chroma import ChromaStore
from activerag.stores.embedding import MiniLMEmbedding
from activerag.stores.query_encoder import EncodedQueryStore, QueryEncoder


class TinyEmbedding(MiniLMEmbedding):
    """Chroma's embedding function, with 2-d vectors: (is about Vesk, is about Ulm)."""

    def __init__(self) -> None:
        super().__init__(path=Path("tiny"))

    def __call__(self, input):  # noqa: A002
        return [np.asarray(vector(t), np.float32) for t in input]


def vector(text: str) -> list[float]:
    v = np.array([float("Vesk" in text) + 0.1, float("Ulm" in text) + 0.1])
    return list(v / np.linalg.norm(v))


class TinyModel:
    """A sentence-transformers stand-in: the query tower of a trained encoder folder."""

    def encode(self, texts, batch_size, normalize_embeddings, show_progress_bar):
        return np.asarray([vector(t) for t in texts], np.float32)

    def get_sentence_embedding_dimension(self) -> int:
        return 2


DOCS = [Document(page_content="Alpha Beta was born in Vesk.", id="d1",
                 metadata={"title": "Alpha Beta"}),
        Document(page_content="Alpha Beta moved to Ulm.", id="d2", metadata={"title": "Ulm"})]


@pytest.fixture
def encoder(tmp_path, monkeypatch):
    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "modules.json").write_text("[]")
    found = QueryEncoder(folder)
    monkeypatch.setattr(found, "_model", TinyModel())
    return found


@pytest.mark.parametrize(("url", "host", "port", "ssl"), [
    ("http://chroma.internal:9123", "chroma.internal", 9123, False),
    ("https://chroma.internal", "chroma.internal", 8000, True),
    ("http://:7000", "127.0.0.1", 7000, False)])
def test_a_chroma_url_s_host_port_and_scheme_reach_the_client(monkeypatch, url, host, port, ssl):
    import chromadb

    made = {}
    monkeypatch.setattr(chromadb, "HttpClient", lambda **kw: made.update(kw) or "client")
    assert chroma._client(None, url) == "client"
    assert (made["host"], made["port"], made["ssl"]) == (host, port, ssl)


def test_a_collection_reports_the_length_of_its_vectors(tmp_path):
    store = ChromaStore(tmp_path / "store", embedding=TinyEmbedding())
    store.add_embedded(DOCS, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert store.dimension() == 3


def test_a_store_searched_with_a_query_encoder_adds_and_searches_with_its_vectors(tmp_path,
                                                                                 encoder):
    source = ChromaStore(tmp_path / "store", embedding=TinyEmbedding())
    store = EncodedQueryStore(source, encoder)
    assert store.add(DOCS) == 2 and store.add(DOCS) == 0 and len(store) == 2
    assert np.allclose(encoder.encode(["Where is Ulm?"]), [vector("Ulm")])
    [(doc, similarity)] = store.search("Who lives in Ulm?", 1)
    assert doc.id == "d2" and similarity == pytest.approx(1.0, abs=1e-5)
    [(doc, _)] = store.search("Who was born in Vesk?", 1)
    assert doc.id == "d1"


def test_every_passage_comes_back_with_its_title_and_vector_in_any_batch_size(tmp_path):
    """What REPLUG-LSR's trainer re-embeds from: each stored passage, its title and its own
    vector, whole across batches (the collection's order)."""
    store = ChromaStore(tmp_path / "store", embedding=TinyEmbedding())
    vectors = [[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]]
    store.add_embedded(DOCS, vectors)
    for batch in (1, 2, 5000):
        docs, got = store.passages(batch=batch)
        by_id = dict(zip([d.id for d in docs], got, strict=True))
        assert sorted(d.id for d in docs) == ["d1", "d2"] and got.dtype == np.float32
        assert np.allclose(by_id["d1"], vectors[0]) and np.allclose(by_id["d2"], vectors[1])
        assert {d.id: (d.page_content, d.metadata["title"]) for d in docs} == {
            "d1": ("Alpha Beta was born in Vesk.", "Alpha Beta"),
            "d2": ("Alpha Beta moved to Ulm.", "Ulm")}
    with pytest.raises(CorpusError, match="the Chroma store is empty; ingest a corpus first"):
        ChromaStore(tmp_path / "empty", embedding=TinyEmbedding()).passages()
