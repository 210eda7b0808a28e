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


def test_yes_no_reads_the_final_answer():
    from activerag.metrics import yes_no

    assert yes_no("Pears float. So the answer is no.") == "no"
    assert yes_no("Thus yes. So the final answer is: Yes.") == "yes"
    assert yes_no("So the answer is maybe.") == ""


def test_asqa_str_em_counts_interpretations_covered():
    from activerag.metrics import str_em

    groups = [["Daei", "Ali Daei"], ["Bican"], ["Christine Sinclair"]]
    assert str_em("Ali Daei scored most; Josef Bican too.", groups) == pytest.approx(2 / 3)
    assert str_em("nobody", groups) == 0.0
    assert str_em("x", []) == 0.0


def test_rouge_l_by_hand():
    from activerag.metrics import rouge_l

    # LCS of "w x y z" and "w y z v" is "w y z" (3): P = 3/4, R = 3/4, F = 0.75
    assert rouge_l("w x y z", ["w y z v"]) == pytest.approx(0.75)
    assert rouge_l("w x y z", ["q r", "w x y z"]) == 1.0
    assert rouge_l("", ["w"]) == 0.0
