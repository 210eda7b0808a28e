"""`activerag ingest` killed with -9 midway and run again: BM25 and Chroma end holding exactly
the corpus's passages, none twice, none lost (real BM25 files, real Chroma, real MiniLM)."""

import json
import os
import signal
import time

import pytest

from activerag.stores.corpus import Corpus
from activerag.stores.documents import read_corpus
from activerag.testing.processes import ingest, lines

pytestmark = pytest.mark.integration
WORDS = "river bridge market harbour engineer garden letter winter company guild".split()


def test_a_killed_ingest_run_again_holds_every_passage_once(tmp_path):
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({
        "title": f"Place {i}",
        "text": f"Place {i} has a {WORDS[i % 10]} and a {WORDS[i * 7 % 10]} from {1800 + i}."})
        + "\n" for i in range(1500)))
    store = tmp_path / "store"
    bm25 = store / "bm25" / "docs.jsonl"
    first = ingest(source, store)
    deadline = time.monotonic() + 600
    while lines(bm25) == 0:  # the first batch is in BM25; Chroma is embedding it
        assert first.poll() is None, f"ingest ended before it was killed: {first.stderr.read()}"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert 0 < lines(bm25) < 1500
    again = ingest(source, store)
    out, err = again.communicate(timeout=900)
    assert again.returncode == 0, err
    expected = {d.id for d in read_corpus(source)}
    assert len(expected) == 1500
    rows = [json.loads(line)["id"] for line in bm25.read_text().splitlines()]
    assert len(rows) == len(set(rows)) and set(rows) == expected
    corpus = Corpus(store)
    assert len(corpus.bm25) == 1500
    chroma_ids = corpus.chroma.collection.get(include=[])["ids"]
    assert len(chroma_ids) == len(set(chroma_ids)) and set(chroma_ids) == expected
