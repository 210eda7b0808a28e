from langchain_core.documents import Document

from activerag.nodes.logic import interleave, low_confidence_spans, masked_query, should_retrieve

SENT = "Joe Biden attended the University of Pennsylvania."
TOKENS = [("Joe", 0.9, 0), (" Biden", 0.95, 3), (" attended", 0.8, 9), (" the", 0.7, 18),
          (" University", 0.3, 22), (" of", 0.9, 33), (" Penn", 0.2, 36), ("sylvania", 0.35, 41),
          (".", 0.9, 49)]


def test_gate_fires_on_any_token_below_theta():
    assert should_retrieve([0.9, 0.3, 0.95], 0.5) is True
    assert should_retrieve([0.9, 0.6, 0.95], 0.5) is False
    assert should_retrieve([0.5], 0.5) is False  # strictly below


def test_gate_ends_of_the_scale():
    assert should_retrieve([0.0001], 0.0) is False
    assert should_retrieve([1.0, 1.0], 1.0) is True
    assert should_retrieve([], 1.0) is True
    assert should_retrieve([], 0.5) is False


def test_masking_removes_tokens_below_beta():
    assert masked_query(TOKENS, 0.4) == "Joe Biden attended the of ."
    assert masked_query(TOKENS, 0.0) == SENT
    assert masked_query(TOKENS, 0.75) == "Joe Biden attended of ."


def test_masking_keeps_words_apart_across_a_gap():
    toks = [("New", 0.9, 0), ("ark", 0.1, 3), ("ville", 0.9, 6)]
    assert masked_query(toks, 0.5) == "New ville"


def test_spans_are_runs_of_low_tokens_grown_to_words():
    assert low_confidence_spans(TOKENS, 0.4, SENT) == ["University", "Pennsylvania"]
    # " Penn" is low but "sylvania" is not: the span still covers the whole word
    assert low_confidence_spans(TOKENS, 0.25, SENT) == ["Pennsylvania"]
    assert low_confidence_spans(TOKENS, 0.1, SENT) == []


def test_adjacent_low_tokens_form_one_span():
    toks = [("Born", 0.9, 0), (" in", 0.9, 4), (" New", 0.2, 7), (" York", 0.3, 11),
            (".", 0.9, 16)]
    assert low_confidence_spans(toks, 0.4, "Born in New York.") == ["New York"]


def test_interleave_round_robin_dedup_and_cut():
    a = [Document(page_content=x, id=x) for x in "abc"]
    b = [Document(page_content=x, id=x) for x in "bde"]
    assert [d.id for d in interleave([a, b], 4)] == ["a", "b", "d", "c"]
    assert [d.id for d in interleave([a, b], 10)] == ["a", "b", "d", "c", "e"]
    assert interleave([], 3) == []
