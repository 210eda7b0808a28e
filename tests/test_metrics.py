import pytest

from activerag.answers import extract_answer, find_answer, normalize
from activerag.evaluation.metrics import best_prf, exact_match, rouge_l, str_em, token_prf, yes_no


def test_extract_answer_follows_the_paper_pattern():
    assert extract_answer("X founded Y. So the answer is Detroit, Michigan.") == "Detroit, Michigan"
    assert extract_answer("So the answer is 1.5 million.") == "1.5 million"
    assert extract_answer("the answer is: no\nmore") == "no"
    assert extract_answer("So the final answer is: Kelmor.") == "Kelmor"
    assert extract_answer("So the ANSWER IS   Gepu") == "Gepu"
    assert extract_answer("") == ""


def test_the_answer_runs_to_the_end_of_its_line_less_one_period():
    assert extract_answer("So the answer is Edward L. Cahn.") == "Edward L. Cahn"
    assert extract_answer("So the answer is St. Louis.") == "St. Louis"
    assert extract_answer("So the answer is Washington, D.C..") == "Washington, D.C."
    assert extract_answer("So the answer is Coolie No. 1 .") == "Coolie No. 1"
    assert extract_answer("So the answer is Kelmor.\nQuestion: where?") == "Kelmor"


def test_the_first_answer_is_scored():
    text = "So the answer is Kelmor.\n\nQuestion: Where is Gepu?\nAnswer: So the answer is Sivania."
    assert extract_answer(text) == "Kelmor"
    assert find_answer(text).start() == 7


def test_without_the_pattern_the_answer_is_empty_unless_asked_to_fall_back():
    assert extract_answer("No pattern here. Final guess.") == ""
    assert extract_answer("No pattern here. Final guess.", fallback=True) == "Final guess"
    assert extract_answer("", fallback=True) == ""
    # "answer is" inside another word does not count
    assert find_answer("the answer issue") is None
    assert extract_answer("The answer issue. Kelmor!", fallback=True) == "Kelmor!"


def test_normalize_and_exact_match():
    assert normalize("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize("An apple, a pear") == "apple pear"
    assert exact_match("the Detroit", ["Detroit"]) == 1.0
    assert exact_match("Detroit city", ["Detroit"]) == 0.0
    assert exact_match("Motor City", ["Detroit", "motor city"]) == 1.0
    assert exact_match("x", []) == 0.0


def test_token_f1_by_hand():
    # prediction 3 tokens, gold 2 tokens, 1 in common: P=1/3, R=1/2, F1=0.4
    assert token_prf("red big house", "house green") == pytest.approx((1 / 3, 0.5, 0.4))
    # multisets: "red red" against "red" has one common token, not two
    assert token_prf("red red", "red") == pytest.approx((0.5, 1.0, 2 / 3))
    assert token_prf("red", "red red") == pytest.approx((1.0, 0.5, 2 / 3))
    assert token_prf("", "x") == (0.0, 0.0, 0.0)
    assert token_prf("x", "") == (0.0, 0.0, 0.0)
    assert token_prf("a b", "c d") == (0.0, 0.0, 0.0)
    assert best_prf("Motor City", ["Detroit", "Motor City"]) == (1.0, 1.0, 1.0)
    assert best_prf("x", []) == (0.0, 0.0, 0.0)


def test_yes_and_no_only_match_themselves():
    assert token_prf("no", "yes no") == (0.0, 0.0, 0.0)
    assert token_prf("yes", "yes") == (1.0, 1.0, 1.0)
    assert token_prf("Yes.", "yes") == (1.0, 1.0, 1.0)
    assert token_prf("noanswer", "no answer") == (0.0, 0.0, 0.0)
    assert token_prf("no way", "no") == (0.0, 0.0, 0.0)


def test_precision_and_recall_are_each_the_best_over_aliases():
    # "big red house": against "red" P=1/3 R=1; against "big red house tall" P=1 R=3/4
    p, r, f1 = best_prf("big red house", ["red", "big red house tall"])
    assert (p, r) == pytest.approx((1.0, 1.0))
    assert f1 == pytest.approx(2 * 0.75 / 1.75)


def test_yes_no_reads_the_final_answer():
    assert yes_no("Pears float. So the answer is no.") == "no"
    assert yes_no("Thus yes. So the final answer is: Yes.") == "yes"
    assert yes_no("So the answer is maybe.") == ""
    assert yes_no("So the answer is no way.") == "no"
    assert yes_no("no pattern") == ""


def test_asqa_str_em_counts_interpretations_covered():
    groups = [["Daei", "Ali Daei"], ["Bican"], ["Christine Sinclair"]]
    assert str_em("Ali Daei scored most; Josef Bican too.", groups) == pytest.approx(2 / 3)
    assert str_em("nobody", groups) == 0.0
    assert str_em("x", []) == 0.0
    # an answer that normalises to nothing never matches
    assert str_em("the answer", [["The"]]) == 0.0


def test_rouge_l_by_hand():
    # LCS of "w x y z" and "w y z v" is "w y z" (3): P = 3/4, R = 3/4, F = 0.75
    assert rouge_l("w x y z", ["w y z v"]) == pytest.approx(0.75)
    # LCS 2 of 4 predicted and 2 reference tokens: P = 1/2, R = 1, F = 2/3
    assert rouge_l("w x y z", ["w z"]) == pytest.approx(2 / 3)
    assert rouge_l("w x y z", ["q r", "w x y z"]) == 1.0
    assert rouge_l("w x y z", ["w x y z", "q r"]) == 1.0
    assert rouge_l("", ["w"]) == 0.0
    assert rouge_l("w", []) == 0.0


def test_the_fallback_is_the_last_of_several_sentences_less_its_periods():
    assert extract_answer("One. Two! Three?", fallback=True) == "Three?"
    assert extract_answer("One. Two. Paid by LAX.", fallback=True) == "Paid by LAX"
    assert extract_answer("One. Two. Three...", fallback=True) == "Three"


def test_yes_and_noanswer_never_partly_match_a_longer_answer():
    assert token_prf("yes", "yes sir") == (0.0, 0.0, 0.0)
    assert token_prf("yes sir", "yes") == (0.0, 0.0, 0.0)
    assert token_prf("noanswer", "noanswer here") == (0.0, 0.0, 0.0)
    assert token_prf("noanswer", "noanswer") == (1.0, 1.0, 1.0)
    # an ordinary word is scored as usual
    assert token_prf("maybe", "maybe sir") == pytest.approx((1.0, 0.5, 2 / 3))


def test_rouge_l_counts_only_common_subsequences():
    assert rouge_l("w", ["x"]) == 0.0
    assert rouge_l("w x", ["x"]) == pytest.approx(2 / 3)
    # LCS of "w x y" and "y w x" is "w x" (2): P = R = 2/3
    assert rouge_l("w x y", ["y w x"]) == pytest.approx(2 / 3)


def test_longbench_qa_f1_gives_yes_no_partial_credit_and_takes_the_best_gold():
    from activerag.evaluation.metrics import qa_f1

    assert qa_f1("Yes, both are.", ["yes"]) == pytest.approx(0.5)  # P 1/2, R 1
    assert qa_f1("The Empire of Brazil", ["Argentina", "Empire of Brazil"]) == 1.0
    assert qa_f1("Paris", ["Rome"]) == 0.0
    assert qa_f1("", ["Rome"]) == 0.0
    assert qa_f1("Rome", []) == 0.0  # no gold answer: nothing to earn
