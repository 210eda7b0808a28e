import pytest
from langchain_core.documents import Document

from activerag.nodes.flare.logic import (
    follow_up_at_end,
    last_follow_up,
    low_confidence_spans,
    split_search,
    window_query,
)
from activerag.nodes.loop_logic import (
    answer_end,
    interleave,
    masked_query,
    question_words,
    should_retrieve,
    word_key,
)

SENT = "Joe Biden attended the University of Pennsylvania."
TOKENS = [("Joe", 0.9, 0), (" Biden", 0.95, 3), (" attended", 0.8, 9), (" the", 0.7, 18),
          (" University", 0.3, 22), (" of", 0.9, 33), (" Penn", 0.2, 36), ("sylvania", 0.35, 41),
          (".", 0.9, 49)]


def toks(*pairs):
    """(text, prob) pairs laid end to end with their offsets."""
    out, pos = [], 0
    for text, prob in pairs:
        out.append((text, prob, pos))
        pos += len(text)
    return out


def test_gate_fires_on_any_token_below_theta():
    assert should_retrieve([0.9, 0.3, 0.95], 0.5) is True
    assert should_retrieve([0.9, 0.6, 0.95], 0.5) is False
    assert should_retrieve([0.5], 0.5) is False  # strictly below
    assert should_retrieve([0.4999], 0.5) is True


def test_gate_ends_of_the_scale():
    assert should_retrieve([0.0001], 0.0) is False
    assert should_retrieve([1.0, 1.0], 1.0) is True
    assert should_retrieve([], 1.0) is True
    assert should_retrieve([], 0.5) is False
    assert should_retrieve([0.999], 0.9999) is True


def test_masking_removes_tokens_below_beta():
    assert masked_query(TOKENS, 0.4) == "Joe Biden attended the of ."
    assert masked_query(TOKENS, 0.0) == SENT
    assert masked_query(TOKENS, 0.75) == "Joe Biden attended of ."
    assert masked_query(TOKENS, 0.3) == "Joe Biden attended the University of sylvania."
    assert masked_query(TOKENS, 1.0) == ""


def test_masking_keeps_words_apart_across_a_gap():
    assert masked_query(toks(("New", 0.9), ("ark", 0.1), ("ville", 0.9)), 0.5) == "New ville"
    assert masked_query(toks(("New", 0.9), ("ark", 0.1), (" ville", 0.9)), 0.5) == "New ville"
    assert masked_query(toks(("New", 0.1), ("ark", 0.9)), 0.5) == "ark"


def test_word_masking_removes_whole_words():
    tokens = toks(("Da", 0.2), ("eselin", 0.9), (" Company", 0.9), (" was", 0.9),
                  (" founded", 0.9), (" in", 0.9), (" Kel", 0.9), ("mor", 0.1), (".", 0.9))
    assert masked_query(tokens, 0.4) == "eselin Company was founded in Kel ."
    assert masked_query(tokens, 0.4, "word") == "Company was founded in"
    keep = question_words("Where was the founder of Daeselin Company born?")
    assert masked_query(tokens, 0.4, "token", keep) == "Daeselin Company was founded in Kel ."
    assert masked_query(tokens, 0.4, "word", keep) == "Daeselin Company was founded in"
    assert masked_query(tokens, 0.0, "word") == "Daeselin Company was founded in Kelmor."


def test_question_words_and_word_keys():
    assert word_key(" Kelmor.") == "kelmor"
    assert word_key("\"Gepu's\"") == "gepu's"
    assert question_words("Where is Kelmor, exactly?") == {"where", "is", "kelmor", "exactly"}
    assert question_words(" ? ") == frozenset()


def test_spans_are_runs_of_low_tokens_grown_to_words():
    assert low_confidence_spans(TOKENS, 0.4, SENT) == ["University", "Pennsylvania"]
    # " Penn" is low but "sylvania" is not: the span still covers the whole word
    assert low_confidence_spans(TOKENS, 0.25, SENT) == ["Pennsylvania"]
    assert low_confidence_spans(TOKENS, 0.1, SENT) == []
    # a low continuation grows back to its word's start
    tokens = toks(("Born", 0.9), (" in", 0.9), (" Kel", 0.9), ("mor", 0.1), (".", 0.9))
    assert low_confidence_spans(tokens, 0.4, "Born in Kelmor.") == ["Kelmor"]


def test_adjacent_low_tokens_form_one_span():
    tokens = toks(("Born", 0.9), (" in", 0.9), (" New", 0.2), (" York", 0.3), (".", 0.9))
    assert low_confidence_spans(tokens, 0.4, "Born in New York.") == ["New York"]


def test_low_tokens_a_few_confident_tokens_apart_merge_into_one_span():
    assert low_confidence_spans(TOKENS, 0.4, SENT, merge_gap=1) == ["University of Pennsylvania"]
    assert low_confidence_spans(TOKENS, 0.4, SENT, merge_gap=3) == ["University of Pennsylvania"]
    tokens = toks(("A", 0.1), (" b", 0.9), (" c", 0.9), (" d", 0.9), (" E", 0.1), (" f", 0.9))
    assert low_confidence_spans(tokens, 0.4, "A b c d E f", merge_gap=3) == ["A b c d E"]
    assert low_confidence_spans(tokens, 0.4, "A b c d E f", merge_gap=2) == ["A", "E"]
    # spans that repeat a text are asked about once
    tokens = toks(("X", 0.1), (" y", 0.9), (" y", 0.9), (" y", 0.9), (" X", 0.1))
    assert low_confidence_spans(tokens, 0.4, "X y y y X") == ["X"]


def test_interleave_round_robin_dedup_and_cut():
    a = [Document(page_content=x, id=x) for x in "abc"]
    b = [Document(page_content=x, id=x) for x in "bde"]
    assert [d.id for d in interleave([a, b], 4)] == ["a", "b", "d", "c"]
    assert [d.id for d in interleave([a, b], 10)] == ["a", "b", "d", "c", "e"]
    assert [d.id for d in interleave([b, a], 2)] == ["b", "a"]
    assert [d.id for d in interleave([a[:1], b], 3)] == ["a", "b", "d"]
    assert interleave([], 3) == []
    # without ids, documents are told apart by their text
    same = [Document(page_content="t"), Document(page_content="t"), Document(page_content="u")]
    assert [d.page_content for d in interleave([same], 3)] == ["t", "u"]


def test_window_queries_as_in_table_4():
    units = [["a", " b"], [" c", " d", " e"]]
    assert window_query(units, 0) == "c d e"
    assert window_query(units, 2) == "d e"
    assert window_query(units, -1) == "a b c d e"
    assert window_query([], 0) == ""


@pytest.mark.parametrize(("segment", "question"), [
    (" Yes.\nFollow up: Where is B?", "Where is B?"),          # the output ended on it
    (" Yes.\nFollow up: Where is B?\n  ", "Where is B?"),      # trailing blank kept apart
    ("Follow up: Who is A?", "Who is A?"),                     # one line
    (" Yes. Follow up: Who is A?", "Who is A?"),               # the marker inside the line
    ("Follow up: Who wrote Follow up: A Novel?", "Who wrote Follow up: A Novel?"),  # in it
    ("Follow up: Who is A?\nIntermediate answer: Kel.", None),  # answered already
    (" Yes.\nFollow up:", None),                               # no question
    ("", None), ("\n", None)])
def test_a_follow_up_at_the_end_of_an_output_is_a_pause(segment, question):
    assert follow_up_at_end(segment, "Follow up:") == question


def test_last_follow_up_question():
    seg = " Yes.\nFollow up: Who is A?\nIntermediate answer: B.\nFollow up:  Where is B? \n"
    assert last_follow_up(seg, "Follow up:") == "Where is B?"
    assert last_follow_up("Follow up:\n", "Follow up:") is None
    assert last_follow_up("nothing", "Follow up:") is None


def test_split_search():
    assert split_search("Born in [Search(Kelmor (city)", "[Search(", ")]") == (
        "Born in", "Kelmor (city)")
    assert split_search("Born in [Search(Kelmor)] more", "[Search(", ")]") == ("Born in",
                                                                               "Kelmor")
    assert split_search("Born in [Search(", "[Search(", ")]") == ("Born in", "")
    assert split_search("Born in  ", "[Search(", ")]") == ("Born in  ", None)
    assert split_search("Line.\n[Search( q ", "[Search(", ")]") == ("Line.\n", "q")


def test_answer_end():
    text = "Alpha was born in Kelmor. So the answer is Kelmor. Gepu is"
    spans = [(0, 25), (26, 50), (51, 58)]
    assert answer_end(text, spans, complete=False) == 50
    # the answer sentence is the last one: it may still grow unless the text is complete
    assert answer_end(text[:50], spans[:2], complete=False) is None
    assert answer_end(text[:50], spans[:2], complete=True) == 50
    assert answer_end(text[:50] + "\n", spans[:2], complete=False) == 50
    assert answer_end("Alpha was born in Kelmor.", [(0, 25)], complete=True) is None
    assert answer_end("So the answer is x", [], complete=True) is None


def test_question_words_are_kept_wherever_they_stand_in_the_draft():
    tokens = toks(("Born", 0.9), (" in", 0.9), (" Kel", 0.9), ("mor", 0.1), (".", 0.9))
    assert masked_query(tokens, 0.5) == "Born in Kel ."
    assert masked_query(tokens, 0.5, "token", frozenset({"kelmor"})) == "Born in Kelmor."
    assert masked_query(tokens, 0.5, "word", frozenset({"kelmor"})) == "Born in Kelmor."


def test_a_token_at_exactly_beta_is_not_a_span():
    tokens = toks(("Born", 0.9), (" in", 0.9), (" Kelmor", 0.4), (".", 0.9))
    assert low_confidence_spans(tokens, 0.4, "Born in Kelmor.") == []
    assert low_confidence_spans(tokens, 0.41, "Born in Kelmor.") == ["Kelmor"]


def test_spans_grow_to_the_first_and_the_last_token():
    assert low_confidence_spans(toks(("Kel", 0.9), ("mor", 0.1)), 0.4, "Kelmor") == ["Kelmor"]
    tokens = toks(("In", 0.9), (" Kel", 0.1), ("mo", 0.9), ("r", 0.9))
    assert low_confidence_spans(tokens, 0.4, "In Kelmor") == ["Kelmor"]


def test_spans_that_touch_after_growing_to_words_become_one():
    # "A" and "B" are two low tokens apart, but "x" belongs to A's word: the spans touch
    tokens = toks(("A", 0.1), ("x", 0.9), (" B", 0.1), (" c", 0.9))
    assert low_confidence_spans(tokens, 0.4, "Ax B c") == ["Ax B"]
    tokens = toks(("A", 0.1), ("x", 0.9), (" B", 0.1), (" c", 0.9), (" D", 0.1), ("y", 0.9))
    assert low_confidence_spans(tokens, 0.4, "Ax B c Dy") == ["Ax B", "Dy"]


def test_window_query_of_the_previous_unit_among_several():
    units = [["a"], [" b"], [" c", " d"]]
    assert window_query(units, 0) == "c d"
    assert window_query(units, 3) == "b c d"
    assert window_query(units, 9) == "a b c d"


def test_split_search_takes_the_first_search_and_its_first_close():
    assert split_search("[Search(Kelmor)]", "[Search(", ")]") == ("", "Kelmor")
    assert split_search("A [Search(x)] b [Search(y", "[Search(", ")]") == ("A", "x")
    assert split_search("A [Search(x)] b )]", "[Search(", ")]") == ("A", "x")
    assert split_search("LAX [Search(q", "[Search(", ")]") == ("LAX", "q")


def test_answer_end_skips_a_sentence_that_ends_where_the_answer_starts():
    text = "So the answer is Kelmor. More."
    # spans given by a splitter that cut before "answer": the first ends at its start
    assert answer_end(text, [(0, 7), (7, 24), (25, 30)], complete=False) == 24


def test_an_answer_sentence_needs_an_answer():
    assert answer_end("So the answer is", [(0, 16)], complete=True) is None
    assert answer_end("So the answer is .", [(0, 18)], complete=True) == 18
    assert answer_end("So the final answer is: Kelmor.", [(0, 31)], True, final_only=True) == 31
    assert answer_end("The answer is x. More", [(0, 16), (17, 21)], False,
                      final_only=True) is None
