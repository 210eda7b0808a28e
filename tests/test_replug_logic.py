"""REPLUG's pure decisions with small literal inputs and hand-computed values."""

import math

import pytest

from activerag.nodes.replug.logic import (
    bits_per_byte,
    choose,
    doc_weights,
    logsumexp,
    mixture_logprob,
    vote,
)

L = math.log


def test_weights_are_a_softmax_of_scores_over_tau():
    assert doc_weights([1.0, 2.0], 1.0) == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e)])
    # a larger tau flattens, a smaller one sharpens
    assert doc_weights([1.0, 2.0], 10.0)[1] == pytest.approx(1 / (1 + math.exp(-0.1)))
    assert doc_weights([1.0, 2.0], 0.01)[1] == pytest.approx(1.0)
    assert doc_weights([5.0, 5.0, 5.0], 1.0) == pytest.approx([1 / 3] * 3)
    assert doc_weights([], 1.0) == []
    # large raw scores do not overflow
    assert doc_weights([1000.0, 999.0], 1.0)[0] == pytest.approx(math.e / (1 + math.e))
    with pytest.raises(ValueError, match="tau"):
        doc_weights([1.0], 0.0)


def test_logsumexp_and_the_mixture_of_one_token():
    assert logsumexp([L(0.2), L(0.3)]) == pytest.approx(L(0.5))
    assert logsumexp([]) == -math.inf
    assert logsumexp([-math.inf, L(0.5)]) == pytest.approx(L(0.5))
    assert logsumexp([-math.inf, -math.inf]) == -math.inf
    assert mixture_logprob([L(0.2), L(0.6)], [0.5, 0.5]) == pytest.approx(L(0.4))
    assert mixture_logprob([L(0.2), L(0.6)], [1.0, 0.0]) == pytest.approx(L(0.2))


def test_a_choice_is_certified_when_no_rival_can_beat_it():
    # A lists 1 (0.6) and 2 (0.3): an unlisted token has at most min(0.3, 0.1) = 0.1;
    # B lists 2 (0.5) and 3 (0.4): at most min(0.4, 0.1) = 0.1.
    choice = choose([{1: L(0.6), 2: L(0.3)}, {2: L(0.5), 3: L(0.4)}], [0.5, 0.5])
    assert choice.token == 2
    assert choice.low == pytest.approx(0.4) and choice.high == pytest.approx(0.4)
    # token 1 could reach 0.3 + 0.5 * 0.1 = 0.35
    assert choice.rival_high == pytest.approx(0.35)
    assert choice.certified


def test_a_choice_that_a_rival_could_beat_is_not_certified():
    # caps: A min(0.2, 0.3) = 0.2, B min(0.3, 0.25) = 0.25
    choice = choose([{1: L(0.5), 2: L(0.2)}, {2: L(0.45), 3: L(0.3)}], [0.5, 0.5])
    assert choice.token == 2 and choice.low == pytest.approx(0.325)
    # token 1 has 0.25 and could have 0.125 more from B
    assert choice.rival_high == pytest.approx(0.375)
    assert not choice.certified


def test_an_unseen_token_can_be_the_rival():
    # each document lists one token at 0.3, leaving 0.7 unlisted: anything may hide there
    choice = choose([{1: L(0.3)}, {2: L(0.3)}], [0.5, 0.5])
    assert choice.token == 1  # the tie goes to the smaller id
    assert (choice.low, choice.high) == pytest.approx((0.15, 0.3))
    assert choice.rival_high == pytest.approx(0.3)  # token 2: 0.15 + 0.5 * 0.3; unseen: 0.3
    assert not choice.certified


def test_weights_decide_between_documents():
    tops = [{1: L(0.9), 2: L(0.05)}, {2: L(0.9), 1: L(0.05)}]
    assert choose(tops, [0.8, 0.2]).token == 1
    assert choose(tops, [0.2, 0.8]).token == 2


def test_choose_refuses_what_it_cannot_mix():
    with pytest.raises(ValueError, match="^choose needs one top-N view per weighted document$"):
        choose([{1: 0.0}], [0.5, 0.5])
    with pytest.raises(ValueError, match="^a document's view of a position is empty$"):
        choose([{}], [1.0])


def test_vote_sums_weights_per_normalised_answer():
    # Paris: 0.3 * 0.5 + 0.3 * 0.5 = 0.3; Lyon: 0.4 * 0.9 = 0.36
    assert vote(["Paris", "paris.", "Lyon"], [0.3, 0.3, 0.4], [L(0.5), L(0.5), L(0.9)]) == "Lyon"
    # Lyon: 0.4 * 0.5 = 0.2 < 0.3: the first spelling of the winner is returned
    assert vote(["Paris", "paris.", "Lyon"], [0.3, 0.3, 0.4], [L(0.5), L(0.5), L(0.5)]) == "Paris"
    assert vote([], [], []) == ""
    # a tie goes to the answer seen first
    assert vote(["A", "B"], [0.5, 0.5], [0.0, 0.0]) == "A"
    assert vote(["B", "A"], [0.5, 0.5], [0.0, 0.0]) == "B"


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        mixture_logprob([L(0.5)], [0.5, 0.5])
    with pytest.raises(ValueError):
        vote(["A"], [0.5, 0.5], [0.0])


def test_bits_per_byte():
    assert bits_per_byte([L(0.5)] * 4, "abcd") == pytest.approx(1.0)
    assert bits_per_byte([L(0.25)], "é") == pytest.approx(1.0)  # 2 bits over 2 bytes
    with pytest.raises(ValueError, match="^bits per byte of an empty text$"):
        bits_per_byte([], "")


def test_a_round_decides_until_a_document_disagrees():
    from activerag.nodes.replug.logic import decide_round

    a = [(1, {1: L(0.9), 2: L(0.05)}), (5, {5: L(0.9), 6: L(0.05)}), (7, {7: L(0.9)})]
    b = [(1, {1: L(0.8), 2: L(0.1)}), (6, {6: L(0.6), 5: L(0.3)}), (8, {8: L(0.9)})]
    # position 0: both say 1; position 1: the mixture picks 5 (0.5*0.9 + 0.5*0.3 = 0.6 vs
    # 0.5*0.05 + 0.5*0.6 = 0.325), which b did not generate: b's position 2 is void
    decided = decide_round([a, b], [0.5, 0.5])
    assert decided.tokens == [1, 5]
    assert decided.low == pytest.approx([0.85, 0.6])
    assert decided.certified == [True, True]
    # weighted towards b, the mixture follows b's token, which a did not generate
    assert decide_round([a, b], [0.1, 0.9]).tokens == [1, 6]


def test_a_round_stops_where_a_look_ahead_ends():
    from activerag.nodes.replug.logic import decide_round

    a = [(1, {1: L(0.9)}), (2, {2: L(0.9)})]
    b = [(1, {1: L(0.9)})]
    assert decide_round([a, b], [0.5, 0.5]).tokens == [1]
    assert decide_round([a, []], [0.5, 0.5]).tokens == []
    # agreeing documents let a round decide every position they proposed
    assert decide_round([a, a], [0.5, 0.5]).tokens == [1, 2]
    # no documents, nothing decided
    empty = decide_round([], [])
    assert (empty.tokens, empty.low, empty.certified) == ([], [], [])


def test_document_keep_cuts_only_what_overflows_and_refuses_what_cannot_fit():
    from activerag.nodes.replug.logic import document_keep

    assert document_keep(90, 50, window=100, reserve=10) is None
    assert document_keep(91, 50, window=100, reserve=10) == 49
    assert document_keep(130, 50, window=100, reserve=10) == 10
    assert document_keep(139, 50, window=100, reserve=10) == 1
    with pytest.raises(ValueError, match="even without its document"):
        document_keep(140, 50, window=100, reserve=10)


def test_an_output_with_no_answer_is_no_candidate():
    # λ = 0.571 / 0.215 / 0.215, only the last document answers: pooled, "" would win
    assert vote(["", "", "Ulm"], [0.571, 0.215, 0.215], [L(0.9)] * 3) == "Ulm"
    assert vote(["", "So", ""], [0.5, 0.2, 0.3], [0.0] * 3) == "So"
    # an answer that normalises to nothing is still one (a multiple-choice "A")
    assert vote(["A", "", "B"], [0.4, 0.5, 0.1], [0.0] * 3) == "A"
    assert vote(["", "A"], [0.5, 0.5], [0.0, 0.0]) == "A"
    assert vote(["", " "], [0.5, 0.5], [0.0, 0.0]) == ""
    assert vote(["", ""], [0.5, 0.5], [0.0, 0.0]) == ""


def test_vote_scores_and_the_best_of_them():
    from activerag.nodes.replug.logic import best_answer, vote_scores

    scores = vote_scores(["Paris", "", "paris.", "Lyon"], [0.3, 0.2, 0.3, 0.2],
                         [L(0.5), L(0.9), L(0.5), L(0.9)])
    assert list(scores) == ["paris", "lyon"]
    assert scores == pytest.approx({"paris": 0.3, "lyon": 0.18})
    assert best_answer(scores) == "paris"
    assert best_answer({"b": 1.0, "a": 1.0}) == "b"  # a tie goes to the first
    assert best_answer({"b": 1.0, "a": 2.0}) == "a"
    assert best_answer({}) is None


def test_top_weighted_is_the_first_of_the_highest():
    from activerag.nodes.replug.logic import top_weighted

    assert top_weighted([0.2, 0.5, 0.3]) == 1
    assert top_weighted([0.4, 0.2, 0.4]) == 0
    assert top_weighted([0.7]) == 0
    with pytest.raises(ValueError, match="^no weights to choose from$"):
        top_weighted([])


def test_each_token_adds_what_the_decoded_prefix_grew_by():
    from activerag.nodes.replug.logic import emitted_texts

    # "Dvořák": "ř" is 2 bytes over 2 tokens; a prefix that ends inside it decodes to U+FFFD
    decoded = ["So", "So Dvo", "So Dvo\ufffd", "So Dvoř", "So Dvořák."]
    assert emitted_texts(decoded) == [" Dvo", "", "ř", "ák."]
    # a 3-byte character over 3 tokens: held back twice
    assert emitted_texts(["", "\ufffd", "\ufffd", "中", "中文"]) == ["", "", "中", "文"]
    # a prefix before the first token that itself ends inside a character
    assert emitted_texts(["a\ufffd", "aé"]) == ["é"]
    assert emitted_texts(["x"]) == []
    assert emitted_texts([]) == []
