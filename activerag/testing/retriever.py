"""A retriever over a few literal passages, in memory, for unit tests of a graph or node."""

from __future__ import annotations

from collections.abc import Mapping

from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document


def memory_retriever(passages: Mapping[str, str], k: int = 2) -> StoreRetriever:
    """A retriever over PASSAGES ({title: text}) returning the K best: real BM25 in memory, no
    server and no files, so a unit test chooses what each search can find.

        retriever = memory_retriever({"Alpha Beta": "Alpha Beta was born in Kelmor.",
                                      "Gepu": "Gepu is a small town."}, k=1)
        graph = build_flare_graph(lm=ScriptedLM([...]), retriever=retriever)

    Each passage is made as ingest makes one (`make_document`: its id hashed from title and
    text, the title in metadata); each document returned has its BM25 score in
    metadata["score"].
    """
    store = BM25Store()
    store.add([make_document(text, title) for title, text in passages.items()])
    return StoreRetriever(store=store, k=k)
