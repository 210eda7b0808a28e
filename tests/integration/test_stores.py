"""Real Chroma and BM25 stores: persistence across reopen, retrieval quality on the demo."""

import pytest

from activerag.demo import build_world
from activerag.stores.bm25 import BM25Store
from activerag.stores.chroma import ChromaStore
from activerag.stores.corpus import Corpus

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


@pytest.fixture
def chroma_server(tmp_path):
    """A real Chroma server (`chroma run`) on a free port."""
    import shutil
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = shutil.which("chroma", path=str(Path(sys.executable).parent)) or "chroma"
    proc = subprocess.Popen([cli, "run", "--path", str(tmp_path / "srv"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(60):
            try:
                httpx.get(f"{url}/api/v2/heartbeat", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("chroma run did not answer")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_chroma_server_store(chroma_server, tmp_path):
    from urllib.parse import urlparse

    from activerag.testing.netcheck import listening_addresses

    assert listening_addresses(urlparse(chroma_server).port) == {"127.0.0.1"}
    from activerag.stores.documents import make_document

    docs = [make_document("Kelmor lies on the Vedria River.", "Kelmor"),
            make_document("Gepu is a small mountain town.", "Gepu")]
    store = ChromaStore(url=chroma_server)
    assert store.add(docs) == 2
    assert ChromaStore(url=chroma_server).add(docs) == 0
    hit, score = ChromaStore(url=chroma_server).search("Which river runs through Kelmor?", 1)[0]
    assert hit.metadata["title"] == "Kelmor" and 0 < score <= 1


def test_the_bm25s_index_ranks_the_2wiki_corpus_as_rank_bm25(tmp_path, shared_data_dir):
    """Identical top-10 ids (and scores) on the real 2Wiki corpus for 100 of its questions."""
    from activerag.evaluation.datasets import load_dataset
    from activerag.stores.bm25 import BM25Store
    from activerag.stores.documents import read_corpus

    corpus = shared_data_dir / "2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json"
    docs = list(read_corpus(corpus))
    indexed = BM25Store(tmp_path)
    indexed.add(docs)
    indexed.build_index()
    indexed = BM25Store(tmp_path)
    reference = BM25Store()
    reference.add(docs)
    assert indexed.indexed and not reference.indexed
    for example in load_dataset("2wiki", 100):
        got = [(d.id, round(s, 8)) for d, s in indexed.search(example.question, 10)]
        want = [(d.id, round(s, 8)) for d, s in reference.search(example.question, 10)]
        assert got == want, example.question
