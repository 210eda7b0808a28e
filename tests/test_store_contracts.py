"""The contract of what a user swaps or relies on in the stores (issue #38): every Store adds
only new ids (within a batch and across batches), searches best first with its scores, respects
k, and keeps what it added across a reopen; each retriever name gives its own store."""

from __future__ import annotations

import pytest

from activerag.stores.bm25 import BM25Store
from activerag.stores.chroma import ChromaStore
from activerag.stores.corpus import Corpus
from activerag.stores.documents import make_document

TEXTS = {
    "Alpha Beta": "Alpha Beta was born in the city of Gepu.",
    "Gepu": "Gepu is a town on the Vedria river.",
    "Kelmor": "Kelmor is a city far from the river.",
    "Delta": "Delta Gamma founded Kelmor Works.",
}


def docs(*titles: str) -> list:
    return [make_document(TEXTS[t], title=t, source="test") for t in titles]


@pytest.fixture(params=["bm25", "chroma"])
def store_at(request, tmp_path):  # type: ignore[no-untyped-def]
    """A function opening the store kind under test at one folder (again: a reopen)."""
    folder = tmp_path / request.param
    return lambda: BM25Store(folder) if request.param == "bm25" else ChromaStore(folder)


def test_a_store_adds_an_id_once_within_a_batch_and_across_batches(store_at):
    store = store_at()
    assert store.add(docs("Alpha Beta", "Gepu", "Alpha Beta")) == 2
    assert store.add(docs("Gepu", "Kelmor")) == 1
    assert store.add(docs("Kelmor")) == 0
    assert len(store) == 3


def test_a_store_searches_best_first_with_non_increasing_scores_and_at_most_k(store_at):
    store = store_at()
    store.add(docs(*TEXTS))
    hits = store.search("Where was Alpha Beta born, in Gepu?", 2)
    assert len(hits) == 2
    assert hits[0][0].metadata["title"] == "Alpha Beta"
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True) and all(isinstance(s, float) for s in scores)
    assert len(store.search("river city town Gepu Kelmor", 3)) == 3
    assert store.search("   ", 2) == []


def test_a_store_keeps_what_it_added_when_opened_again(store_at):
    first = store_at()
    first.add(docs("Alpha Beta", "Gepu"))
    if hasattr(first, "close"):
        first.close()
    again = store_at()
    assert len(again) == 2
    assert again.add(docs("Gepu")) == 0
    assert again.search("Vedria river", 1)[0][0].page_content == TEXTS["Gepu"]


def test_bm25_returns_only_passages_that_match_a_term_and_breaks_ties_in_corpus_order(tmp_path):
    store = BM25Store(tmp_path)
    store.add([make_document("red apple", title="a"), make_document("red apple", title="b"),
               make_document("green pear", title="c")])
    assert [d.metadata["title"] for d, _ in store.search("red", 5)] == ["a", "b"]
    assert store.search("banana", 5) == []


def test_each_retriever_name_gives_its_own_store_and_k(tmp_path):
    corpus = Corpus(tmp_path / "store")
    corpus.bm25.add(docs(*TEXTS))
    bm25 = corpus.retriever("bm25", k=3)
    assert bm25.store is corpus.bm25 and bm25.k == 3
    dense = corpus.retriever("chroma", k=1)
    assert isinstance(dense.store, ChromaStore) and dense.store is corpus.chroma
    assert dense.store is not corpus.bm25 and dense.k == 1
    assert corpus.retriever().store is corpus.bm25  # bm25 by default
