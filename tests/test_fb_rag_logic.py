"""FB-RAG's pure parts: chunks, scores (max over samples, the Eq. 6 mix), budgets, order,
Self-Route's test, LongBench's middle truncation and how much of the gold a reader read."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.nodes.fb_rag import logic as fb
from activerag.nodes.fb_rag.logic import Chunk

CONTEXT = ("Passage 1:\nAda Lovelace\nAda wrote the first program.\n\n"
           "Passage 2:\nCharles Babbage\nBabbage designed the Analytical Engine.\n\n"
           "Passage 3:\nParis\nParis is the capital of France.")


def test_chunks_hold_size_words_each_in_order_with_their_line_breaks():
    chunks = fb.chunk_words(CONTEXT, 4)
    assert [c.words for c in chunks] == [4, 4, 4, 4, 4, 4, 3]
    assert chunks[0] == Chunk(0, "Passage 1:\nAda Lovelace", 0, 4)
    assert chunks[1].text == "Ada wrote the first"
    assert [c.index for c in chunks] == list(range(7))
    assert chunks[-1].start == 24 and chunks[-1].end == 27
    assert fb.chunk_words("", 4) == []
    with pytest.raises(ValueError, match="at least 1 word"):
        fb.chunk_words(CONTEXT, 0)


@given(st.lists(st.text(alphabet="ab \n", min_size=0, max_size=12), max_size=12),
       st.integers(1, 7))
def test_chunks_cover_every_word_once_in_order(parts, size):
    text = " ".join(parts)
    chunks = fb.chunk_words(text, size)
    assert [w for c in chunks for w in c.text.split()] == text.split()
    assert all(c.words == len(c.text.split()) for c in chunks)
    assert all(c.words == size for c in chunks[:-1])
    assert [c.start for c in chunks] == [i * size for i in range(len(chunks))]


def test_paragraph_chunks_are_the_passages_with_their_word_spans():
    chunks = fb.chunk_paragraphs(CONTEXT + "\n\n   \n\n")
    assert [c.text.split("\n")[1] for c in chunks] == ["Ada Lovelace", "Charles Babbage",
                                                       "Paris"]
    assert [(c.start, c.end) for c in chunks] == [(0, 9), (9, 18), (18, 27)]
    assert [c.index for c in chunks] == [0, 1, 2]


def test_bm25_scores_every_chunk_for_every_query():
    chunks = fb.chunk_paragraphs(CONTEXT)
    [babbage, paris] = fb.bm25_scores(chunks, ["Who designed the Analytical Engine?",
                                               "capital of France"])
    assert len(babbage) == len(paris) == 3
    assert fb.ranking(babbage)[0] == 1 and fb.ranking(paris)[0] == 2
    assert babbage[0] == 0.0  # no shared word
    assert fb.bm25_scores(chunks, ["the of is"]) == [[0.0, 0.0, 0.0]]  # stopwords only
    assert fb.bm25_scores([Chunk(0, "the", 0, 1)], ["the"]) == [[0.0]]


def test_the_forward_score_is_the_max_over_samples_not_the_mean():
    # one sample found chunk 2, three did not: the max keeps it first; a mean would not
    samples = [[1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 5.0]]
    assert fb.forward_scores(samples) == [1.0, 2.0, 5.0]
    assert fb.ranking(fb.forward_scores(samples)) == [2, 1, 0]
    with pytest.raises(ValueError, match="at least one sample"):
        fb.forward_scores([])


def test_the_mix_weights_the_question_and_the_samples_raw_or_on_one_scale():
    assert fb.combine([2.0, 0.0], [0.0, 10.0], 0.5, 0.5) == [1.0, 5.0]
    assert fb.combine([2.0, 0.0], [0.0, 10.0], 0.0, 1.0) == [0.0, 10.0]  # Ours-F
    assert fb.combine([2.0, 1.0, 0.0], [0.0, 10.0, 5.0], 0.5, 0.5, "minmax") == [0.5, 0.75, 0.25]
    assert fb.minmax([3.0, 3.0]) == [0.0, 0.0]
    assert fb.minmax([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]


def test_ranking_breaks_ties_by_position():
    assert fb.ranking([1.0, 3.0, 3.0, 0.5]) == [1, 2, 0, 3]


def test_the_budget_takes_chunks_in_order_until_the_next_would_not_fit():
    chunks = [Chunk(i, "w " * n, 0, n) for i, n in enumerate([100, 100, 60, 100])]
    assert fb.within_budget([3, 0, 1, 2], chunks, 250) == [3, 0]  # stops, does not skip ahead
    assert fb.within_budget([2, 0, 1], chunks, 260) == [2, 0, 1]
    assert fb.within_budget([1, 0], chunks, 200) == [1, 0]  # exactly full
    assert fb.within_budget([1, 0], chunks, 50) == [1]  # the first always


def test_chunks_reach_the_reader_in_the_contexts_order_or_the_scores():
    chunks = [Chunk(i, t, 0, 1) for i, t in enumerate("abcd")]
    assert fb.join_chunks(chunks, [3, 0, 2]) == "a\n\nc\n\nd"
    assert fb.join_chunks(chunks, [3, 0, 2], "score") == "d\n\na\n\nc"


@pytest.mark.parametrize("answer,declined", [
    ("Unanswerable.", True), ("The question is unanswerable from the passages", True),
    ("UNANSWERABLE", True), ("Paris", False), ("answerable", False), ("", False)])
def test_self_route_declines_on_a_normalised_substring(answer, declined):
    assert fb.unanswerable(answer) is declined


def test_a_long_prompt_keeps_its_head_and_tail_as_longbench_does():
    assert fb.truncate_middle(list(range(10)), 4) == ([0, 1, 8, 9], 6)
    assert fb.truncate_middle(list(range(10)), 5) == ([0, 1, 7, 8, 9], 5)
    assert fb.truncate_middle([1, 2, 3], 3) == ([1, 2, 3], 0)
    with pytest.raises(ValueError, match="at least 2"):
        fb.truncate_middle([1, 2, 3], 1)


@given(st.lists(st.integers(), max_size=40), st.integers(2, 30))
def test_truncation_never_exceeds_the_limit_and_keeps_both_ends(ids, limit):
    kept, dropped = fb.truncate_middle(ids, limit)
    assert len(kept) == min(len(ids), limit) and dropped == len(ids) - len(kept)
    if ids:
        assert kept[0] == ids[0] and kept[-1] == ids[-1]


def test_gold_word_recall_is_the_share_of_gold_words_read():
    span = [(10 * i, 10 * i + 10) for i in range(4)]  # the spans of four 10-word chunks
    # the first gold paragraph is read whole (3 words), the second by 1 of its 21 words
    assert fb.gold_word_recall([span[1]], [(12, 15), (19, 40)]) == pytest.approx(4 / 24)
    assert fb.gold_word_recall(span[1:], [(12, 15), (19, 40)]) == 1.0
    assert fb.gold_word_recall([span[0]], [(10, 12)]) == 0.0  # touching is not reading
    assert fb.gold_word_recall([span[1]], [(5, 10)]) == 0.0  # nor on the other side
    assert fb.gold_word_recall([span[1]], [(5, 11)]) == pytest.approx(1 / 6)
    assert fb.gold_word_recall([span[0], span[0]], [(5, 15)]) == 0.5  # a word read twice: once
    assert fb.gold_word_recall([span[0]], []) is None


def test_a_gold_paragraph_counts_as_read_when_half_its_words_were():
    span = [(10 * i, 10 * i + 10) for i in range(4)]
    # one word of the second paragraph read is not reading it (the old rule counted it)
    assert fb.gold_half_recall([span[1]], [(12, 15), (19, 40)]) == 0.5
    assert fb.gold_half_recall([span[1]], [(15, 25)]) == 1.0  # 5 of 10 words: half
    assert fb.gold_half_recall([span[1]], [(15, 26)]) == 0.0  # 5 of 11: under half
    assert fb.gold_half_recall([span[1]], [(14, 25)]) == 1.0  # 6 of 11
    assert fb.gold_half_recall([span[2], span[0]], [(5, 25)]) == 1.0  # 10 of 20, two chunks
    assert fb.gold_half_recall([span[0]], []) is None


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 10)), max_size=5),
       st.lists(st.tuples(st.integers(0, 30), st.integers(1, 10)), min_size=1, max_size=4))
def test_gold_recalls_lie_in_0_1_and_reading_every_gold_word_gives_1(read, gold):
    spans = [(a, a + n) for a, n in read]
    golds = [(a, a + n) for a, n in gold]
    for recall in (fb.gold_word_recall, fb.gold_half_recall):
        value = recall(spans, golds)
        assert value is not None and 0.0 <= value <= 1.0
        assert recall([*spans, *golds], golds) == 1.0
