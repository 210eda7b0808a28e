"""Expensive components are built once even when threads race to use them first."""

import asyncio
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import activerag.nodes.parts as parts
import activerag.serving.cache as cache
import activerag.stores.bm25 as bm25
import activerag.stores.chroma as chroma
import activerag.stores.corpus as corpus_mod
import activerag.stores.embedding as embedding_mod
from activerag.context import FlareContext
from activerag.stores.bm25 import BM25Store
from activerag.stores.corpus import Corpus
from activerag.stores.documents import make_document

THREADS = 8
# The spies below sleep this long inside the constructor, so that without a lock every racing
# thread would be inside it at once.
SLOW = 0.05


def race(call: Callable[[], object], threads: int = THREADS) -> list[object]:
    """Run CALL in THREADS threads released together; their results in thread order."""
    barrier = threading.Barrier(threads)
    results: list[object] = [None] * threads
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = call()
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return results


class Counter:
    def __init__(self) -> None:
        self.n = 0
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self.n += 1
        time.sleep(SLOW)


def counted_bm25(monkeypatch) -> Counter:
    """Count the BM25 indexes the store builds from now on."""
    built = Counter()

    class CountingBM25(bm25.BM25Okapi):
        def __init__(self, corpus: list[list[str]]) -> None:
            built.tick()
            super().__init__(corpus)

    monkeypatch.setattr(bm25, "BM25Okapi", CountingBM25)
    return built


def test_concurrent_first_searches_build_one_bm25_index(monkeypatch):
    built = counted_bm25(monkeypatch)
    store = BM25Store()
    store.add([make_document("cats purr softly", "a"), make_document("dogs bark loudly", "b")])
    results = race(lambda: store.search("dogs", 1))
    assert built.n == 1
    assert all([d.metadata["title"] for d, _ in r] == ["b"] for r in results)


def test_an_add_after_the_index_is_built_rebuilds_it_once(monkeypatch):
    built = counted_bm25(monkeypatch)
    store = BM25Store()
    store.add([make_document("cats purr softly", "a")])
    assert store.search("cats", 1)[0][0].metadata["title"] == "a"
    store.add([make_document("dogs bark loudly", "b"), make_document("birds sing", "c")])
    results = race(lambda: store.search("dogs", 1))
    assert built.n == 2
    assert all(r[0][0].metadata["title"] == "b" for r in results)


def test_concurrent_first_embeddings_load_the_model_once(monkeypatch):
    loaded = Counter()

    class FakeSentenceTransformer:
        def __init__(self, path: str, device: str) -> None:
            loaded.tick()
            self.path = path

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = FakeSentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    embedding = embedding_mod.MiniLMEmbedding(Path("/no/such/model"))
    models = race(embedding.encoder)
    assert loaded.n == 1
    assert all(m is models[0] for m in models)
    assert models[0].path == "/no/such/model"


def test_concurrent_first_splitter_calls_load_punkt_once(tmp_path, monkeypatch):
    loaded = Counter()
    from_file = corpus_mod.SentenceSplitter.from_file

    def counting_from_file(path: Path) -> object:
        loaded.tick()
        return from_file(path)

    monkeypatch.setattr(corpus_mod.SentenceSplitter, "from_file", counting_from_file)
    corpus = Corpus(tmp_path / "store")
    splitters = race(corpus.splitter)
    assert loaded.n == 1
    assert all(s is splitters[0] for s in splitters)


def test_concurrent_first_uses_of_the_dense_store_open_it_once(tmp_path, monkeypatch):
    opened = Counter()

    class FakeChromaStore:
        def __init__(self, path: Path | None, url: str | None = None) -> None:
            opened.tick()
            self.path = path

    monkeypatch.setattr(chroma, "ChromaStore", FakeChromaStore)
    corpus = Corpus(tmp_path / "store")
    stores = race(lambda: corpus.chroma)
    assert opened.n == 1
    assert all(s is stores[0] for s in stores)
    assert stores[0].path == tmp_path / "store" / "chroma"


def test_concurrent_lm_for_makes_one_client_per_endpoint(monkeypatch):
    made = Counter()

    class FakeVLLMClient:
        def __init__(self, base_url: str, model: str | None = None, top_logprobs: int = 1) -> None:
            made.tick()
            self.base_url, self.model = base_url, model

    monkeypatch.setattr(parts, "VLLMClient", FakeVLLMClient)
    monkeypatch.setattr(parts, "_lms", {})
    monkeypatch.setattr(parts, "_lm_locks", {}, raising=False)
    monkeypatch.setattr(cache, "_active", None)
    ctx = FlareContext(base_url="http://127.0.0.1:9/v1", model="m")
    other = FlareContext(base_url="http://127.0.0.1:10/v1", model="m")

    async def several() -> list[object]:
        return list(await asyncio.gather(*(parts.Parts().lm_for(ctx) for _ in range(4))))

    # Each thread runs its own event loop, as a server handling runs in several threads does.
    clients = [c for batch in race(lambda: asyncio.run(several())) for c in batch]
    assert made.n == 1
    assert len(clients) == THREADS * 4 and all(c is clients[0] for c in clients)
    assert (clients[0].base_url, clients[0].model) == ("http://127.0.0.1:9/v1", "m")
    assert asyncio.run(parts.Parts().lm_for(other)) is not clients[0]
    assert made.n == 2
