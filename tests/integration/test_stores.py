"""Real Chroma and BM25 stores: persistence across reopen, retrieval quality on the demo."""

import pytest
from activerag.stores.bm25 import BM25Store
from activerag.stores.chroma import ChromaStore
from activerag.stores.corpus import Corpus

from activerag.demo import build_world

pytestmark = pytest.mark.integration


def test_both_stores_persist_and_reopen(demo_store):
    chroma = ChromaStore(demo_store / "chroma")
    bm25 = BM25Store(demo_store / "bm25")
    assert len(chroma) == len(bm25) == 330
    company = build_world().companies[0]
    query = f"Who founded {company['name']}?"
    assert chroma.search(query, 3)[0][0].metadata["title"] == company["name"]
    assert bm25.search(query, 3)[0][0].metadata["title"] == company["name"]


def test_reingesting_adds_nothing_to_either_store(demo_store):
    from activerag.demo import DEMO_CORPUS

    report = Corpus(demo_store).ingest(DEMO_CORPUS, progress=False)
    assert (report.added_bm25, report.added_chroma, report.total) == (0, 0, 330)


async def test_retrievers_are_langchain_retrievers_with_scores(demo_store):
    corpus = Corpus(demo_store)
    for kind in ("bm25", "chroma"):
        docs = await corpus.retriever(kind, k=2).ainvoke("river kilometres long")
        assert len(docs) == 2
        assert docs[0].metadata["score"] >= docs[1].metadata["score"]
        assert docs[0].id and docs[0].metadata["title"]
