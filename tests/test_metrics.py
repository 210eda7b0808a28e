import pytest

from activerag.metrics import best_prf, exact_match, extract_answer, normalize, token_prf


def test_extract_answer_follows_the_paper_pattern():
    assert extract_answer("X founded Y. So the answer is Detroit, Michigan.") == "Detroit, Michigan"
    assert extract_answer("So the answer is 1.5 million.") == "1.5 million"
    assert extract_answer("the answer is: no\nmore") == "no"
    assert extract_answer("No pattern here. Final guess.") == "Final guess"
    assert extract_answer("") == ""


def test_normalize_and_exact_match():
    assert normalize("The  Eiffel-Tower!") == "eiffeltower"
    assert exact_match("the Detroit", ["Detroit"]) == 1.0
    assert exact_match("Detroit city", ["Detroit"]) == 0.0


def test_token_f1_by_hand():
    # prediction 3 tokens, gold 2 tokens, 1 in common: P=1/3, R=1/2, F1=0.4
    assert token_prf("red big house", "house green") == pytest.approx((1 / 3, 0.5, 0.4))
    assert token_prf("", "x") == (0.0, 0.0, 0.0)
    assert best_prf("Motor City", ["Detroit", "Motor City"]) == (1.0, 1.0, 1.0)
