"""The bm25s index reproduces rank-bm25's Okapi scores and rankings (ties in corpus order),
including terms in more than half of the passages; a stored store opens it without reading its
passages, and an index older than docs.jsonl is not used."""

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from activerag.stores.bm25 import BM25Store
from activerag.stores.bm25_index import BM25Index, mean_idf
from activerag.stores.documents import make_document

WORDS = ["river", "bridge", "market", "harbour", "garden", "winter", "guild", "letter"]


MEAN_NEAR_ZERO = [
    [["river", "market", "harbour"], ["river", "market", "letter"],
     ["river", "market", "harbour", "winter"], ["bridge", "harbour"]],
    [["river", "market", "garden", "winter"], ["river", "market", "winter"],
     ["river", "market", "winter"], ["bridge", "harbour"]],
]
"""Vocabularies whose mean idf is within 1e-16 of 0: "river" (in 3 of 4) scores ε times it,
below zero for rank-bm25; summed in another order it came out above zero, and the index
returned passages rank-bm25 does not (hypothesis found them; which order depended on the
process's string hashing)."""

LAST_BIT_TIE = (
    [["river"], ["river"], ["river"], ["market"], ["river", "harbour"],
     ["river", "river", "bridge", "market"], ["river"] * 4 + ["bridge", "harbour"],
     ["river"] * 3 + ["bridge", "bridge", "market", "market", "harbour"],
     ["river"] * 3 + ["bridge", "bridge", "market", "harbour", "harbour"]],
    ["bridge", "market", "harbour"], 1)
"""Passages 7 and 8 tie for rank-bm25 (market and harbour are in equally many passages); the
index's sums differed in the last bit and ranked 8 first (hypothesis found it)."""


def reference(tokens, terms, k):
    """rank-bm25's top K with a positive score, ties in corpus order."""
    scores = BM25Okapi(tokens).get_scores(terms)
    order = sorted((i for i in range(len(tokens)) if scores[i] > 0),
                   key=lambda i: (-scores[i], i))[:k]
    return [(i, scores[i]) for i in order]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1,
                max_size=12),
       st.lists(st.sampled_from(WORDS + ["absent"]), min_size=1, max_size=4),
       st.integers(1, 6))
@example(MEAN_NEAR_ZERO[0], ["river"], 1)
@example(MEAN_NEAR_ZERO[1], ["river"], 1)
@example(*LAST_BIT_TIE)
def test_the_index_ranks_and_scores_as_rank_bm25(tokens, terms, k):
    got = BM25Index.build(tokens).top(terms, k)
    want = reference(tokens, terms, k)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


@pytest.mark.parametrize("tokens", MEAN_NEAR_ZERO)
def test_the_floor_is_rank_bm25s_to_the_last_bit(tokens):
    okapi = BM25Okapi(tokens)
    df = {t: sum(t in d for d in tokens) for t in okapi.idf}
    assert mean_idf(tokens, df, len(tokens)) == okapi.average_idf
    got = BM25Index.build(tokens).scores(["river"])
    assert [s < 0 for s in got] == [s < 0 for s in okapi.get_scores(["river"])]


def test_no_vocabulary_has_a_mean_idf_of_zero():
    assert mean_idf([[], []], {}, 2) == 0.0


def test_a_term_in_most_passages_keeps_rank_bm25s_floor_not_zero():
    tokens = [["river", "bridge"], ["river"], ["river", "town", "town"], ["garden"]]
    got = dict(BM25Index.build(tokens).top(["river"], 4))
    assert set(got) == {0, 1, 2} and all(s > 0 for s in got.values())
    assert got[1] > got[0] > got[2]  # shorter passages first, as Okapi's length norm says
    assert got == pytest.approx(dict(reference(tokens, ["river"], 4)), rel=1e-9)


def passages(n, start=0):
    return [make_document(f"Place {i} has a {WORDS[i % 8]} and a {WORDS[i * 3 % 8]}.",
                          f"Place {i}") for i in range(start, start + n)]


def test_a_stored_store_opens_its_index_and_reads_only_the_passages_found(tmp_path):
    store = BM25Store(tmp_path)
    store.add(passages(40))
    store.build_index()
    memory = BM25Store()
    memory.add(passages(40))
    opened = BM25Store(tmp_path)
    assert opened.indexed and opened._docs is None and len(opened) == 40
    for query in ("river garden", "Place 7 harbour", "letter letter winter", "the a of"):
        got = [(d.id, d.metadata["title"], d.page_content, round(s, 9))
               for d, s in opened.search(query, 5)]
        want = [(d.id, d.metadata["title"], d.page_content, round(s, 9))
                for d, s in memory.search(query, 5)]
        assert got == want, query
    assert opened._docs is None  # no query read the whole file


def test_passages_added_after_the_index_are_searched_until_it_is_rebuilt(tmp_path):
    store = BM25Store(tmp_path)
    store.add(passages(20))
    store.build_index()
    store.close()
    with open(tmp_path / "docs.jsonl", "a") as fh:  # an ingest killed after BM25's append
        d = make_document("Zorbeck is a mountain town.", "Zorbeck")
        fh.write(json.dumps({"id": d.id, "title": "Zorbeck", "text": d.page_content}) + "\n")
    stale = BM25Store(tmp_path)
    assert not stale.indexed and len(stale) == 21
    assert stale.search("Zorbeck mountain", 1)[0][0].metadata["title"] == "Zorbeck"
    stale.add(passages(5, start=20))
    stale.build_index()
    again = BM25Store(tmp_path)
    assert again.indexed and len(again) == 26
    assert again.search("Zorbeck mountain", 1)[0][0].metadata["title"] == "Zorbeck"
