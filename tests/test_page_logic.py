"""The run page's pure logic: the path cut into sentences, the draft tokens a masked query
dropped (from formulate_query's decision or the run's settings), whether a sentence changed."""

from activerag.page.logic import Group, aligned, differs, query_masks, sentence_groups

QUESTION = "Where was Alpha Beta born?"
FIRED = ["draft", "confidence_gate", "formulate_query", "retrieve", "regenerate", "accept"]
KEPT = ["draft", "confidence_gate", "accept"]
PATH = ["begin", "retrieve_input", *FIRED, *KEPT, *FIRED]
DRAFT_1 = [("Alpha", 0.9), (" Beta", 0.9), (" was", 0.8), (" born", 0.9), (" in", 0.7),
           (" Ge", 0.2), ("pu.", 0.6)]
DRAFT_3 = [(" So", 0.9), (" the", 0.9), (" answer", 0.9), (" is", 0.9), (" <Kel>", 0.1)]
TRACE = [
    {"index": 0, "draft": "Alpha Beta was born in Gepu.", "draft_tokens": DRAFT_1,
     "min_prob": 0.2, "retrieved": True, "queries": ["Alpha Beta was born in pu."],
     "fallback": False, "doc_ids": [], "doc_titles": [],
     "sentence": "Alpha Beta was born in Kelmor."},
    {"index": 1, "draft": " Kelmor is a city.", "draft_tokens": [(" Kelmor", 0.9),
                                                                (" is a city.", 0.9)],
     "min_prob": 0.9, "retrieved": False, "queries": [], "fallback": False, "doc_ids": [],
     "doc_titles": [], "sentence": "Kelmor is a city."},
    {"index": 2, "draft": " So the answer is <Kel>", "draft_tokens": DRAFT_3, "min_prob": 0.1,
     "retrieved": True, "queries": ["So the answer is"], "fallback": False, "doc_ids": [],
     "doc_titles": [], "sentence": "So  the answer is <Kel>"},
]
SENTENCES_AT = [0] * 7 + [1] + [0] * 2 + [1] + [0] * 5 + [1]


def test_the_path_is_cut_into_the_steps_of_each_sentence():
    groups = sentence_groups(PATH, SENTENCES_AT, {"draft"})
    assert groups == [Group(0, 2), Group(2, 8, (0,)), Group(8, 11, (1,)), Group(11, 17, (2,))]
    # one node that writes two sentences; steps after the last one; no loop to find a start
    assert sentence_groups(["begin", "generate", "end"], [0, 2, 0]) == [
        Group(0, 2, (0, 1)), Group(2, 3)]
    assert sentence_groups(["begin", "draft"], [0, 0], {"draft"}) == [Group(0, 2)]
    assert sentence_groups([], []) == []


def test_masks_are_shown_only_where_the_settings_reproduce_the_query():
    settings = {"beta": 0.4, "query_formulation": "implicit"}
    assert query_masks(TRACE[0], settings, QUESTION) == [False] * 5 + [True, False]
    whole = {**TRACE[0], "queries": ["Alpha Beta was born in"]}
    assert query_masks(whole, {**settings, "mask_unit": "word"}, QUESTION) == [False] * 5 + [
        True, True]
    lived = {**TRACE[0], "draft_tokens": [("Alpha", 0.1), (" Beta", 0.1), (" lived", 0.1)],
             "queries": ["Alpha Beta"]}
    assert query_masks(lived, {**settings, "keep_question_words": True}, QUESTION) == [
        False, False, True]  # the question's words are never masked
    assert query_masks(TRACE[1], settings, QUESTION) is None  # no retrieval
    assert query_masks(TRACE[0], {**settings, "mask_unit": "word"}, QUESTION) is None
    assert query_masks(TRACE[0], {**settings, "query_formulation": "explicit"}, QUESTION) is None
    assert query_masks(TRACE[0], {}, QUESTION) is None  # no β in the run's context
    everything = {**TRACE[0], "queries": [QUESTION], "fallback": True}
    assert query_masks(everything, {"beta": 1.0}, QUESTION) == [True] * 7
    # a query that is neither the masked draft nor, for an all-masked one, the question
    assert query_masks({**everything, "queries": ["Gepu"]}, {"beta": 1.0}, QUESTION) is None
    assert query_masks(everything, settings, QUESTION) is None


def test_the_masks_come_from_formulate_querys_decision_where_it_shows_one():
    decision = {"node": "formulate_query", "formulation": "implicit", "beta": 0.4,
                "masked": [[" in", 0.7], [" Ge", 0.2]]}
    # no β in the settings: the decision alone tells
    assert query_masks(TRACE[0], {}, QUESTION, decision) == [False] * 4 + [True, True, False]
    assert aligned([("a", 0.5, 0), ("a", 0.2, 0), ("b", 0.2, 0)], [["a", 0.2], ["b", 0.2]]) == [
        False, True, True]
    assert aligned([("a", 0.5, 0)], [["b", 0.5]]) is None
    assert aligned([("a", 0.2, 0)] * 4, [["a", 0.2]] * 3) == [True, True, True, False]
    # a decision that matches no token of the draft: the settings' masks again
    stray = {**decision, "masked": [["zzz", 0.1]]}
    assert query_masks(TRACE[0], {"beta": 0.4}, QUESTION, stray) == [False] * 5 + [True, False]


def test_a_sentence_differs_by_its_words_not_its_spacing():
    assert differs("Alpha Beta was born in Gepu.", "Alpha Beta was born in Kelmor.")
    assert not differs(" So the answer is <Kel>", "So  the answer is <Kel>")
