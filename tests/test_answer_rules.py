"""Each method family scored by its own authors' rule (issue #37): IRCoT's and Adaptive-RAG's
code takes the whole reader output when it writes no "answer is" (`match_all_on_failure`);
FLARE's code, and every other family's here, scores such an output "", which is wrong."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.answers import extract_answer, whole_output
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run, rescore, row_of, score
from activerag.evaluation.summaries import summarise_methods
from activerag.evaluation.tables import markdown_table
from activerag.graphs.registry import METHODS, answer_rule

KELMOR = Example("q0", "Where was Ilsa Brandt born?", ["Kelmor"])


def test_the_issues_example_scores_0_by_flares_rule_and_0_29_by_ircots():
    out = "Ilsa Brandt was born in Kelmor."
    flare, ircot = score(KELMOR, out, []), score(KELMOR, out, [], "whole")
    assert flare["prediction"] == "" and flare["f1"] == 0.0
    assert ircot["prediction"] == "Ilsa Brandt was born in Kelmor"
    assert ircot["f1"] == pytest.approx(2 / 7)  # precision 1/6, recall 1
    assert ircot["em_flare_rule"] == 0.0 and ircot["f1_flare_rule"] == 0.0
    assert "f1_flare_rule" not in flare


def test_an_answer_sentence_wins_under_either_rule():
    out = "Ilsa was born there. So the answer is Kelmor."
    assert score(KELMOR, out, [], "whole")["prediction"] == "Kelmor"
    assert score(KELMOR, out, [], "whole")["f1_flare_rule"] == 1.0
    assert extract_answer(out, rule="whole") == extract_answer(out) == "Kelmor"


@pytest.mark.parametrize(("text", "taken"), [
    ("Kelmor.", "Kelmor"),
    ('"Kelmor."', "Kelmor"),  # enclosing quotes go before the final period
    ("  Kelmor  \nThen more.", "Kelmor"),  # the first line only, as the authors' (.*) matches
    ("St. Louis.", "St. Louis"),  # one final period, not every period
    ("Kelmor..", "Kelmor."),
    ('"', '"'),  # a lone quote is not enclosing quotes
    ("", ""),
])
def test_the_whole_output_is_its_first_line_less_quotes_and_one_final_period(text, taken):
    assert whole_output(text) == taken


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_the_whole_rule_changes_only_outputs_without_an_answer_sentence(text):
    strict = extract_answer(text)
    whole = extract_answer(text, rule="whole")
    if "answer is" in text.lower() and strict:
        assert whole == strict
    if not strict and whole:
        assert whole == whole_output(text)


def test_the_registry_keeps_each_familys_authors_rule():
    whole = {name for name, m in METHODS.items() if m.answer_rule == "whole"}
    # ircot_seakr by its host's rule, so that it compares with ircot like for like
    assert whole == {"ircot", "ircot_chain", "ircot_seakr", "adaptive_rag", "adaptive_rag_prompt"}
    assert all(m.answer_rule == "empty" for name, m in METHODS.items() if name not in whole)
    assert answer_rule("ircot") == "whole" and answer_rule("flare") == "empty"
    assert answer_rule("beta=0.2 word") == "empty"  # a sweep's variant of FLARE


def test_an_evaluation_row_is_scored_by_its_methods_rule():
    out = {"answer": "Ilsa Brandt was born in Kelmor.", "trace": []}
    assert row_of("ircot", KELMOR, out, 1.0)["f1"] == pytest.approx(2 / 7)
    assert row_of("adaptive_rag", KELMOR, out, 1.0)["f1"] == pytest.approx(2 / 7)
    assert row_of("flare", KELMOR, out, 1.0)["f1"] == 0.0


def test_rescoring_applies_each_rows_methods_rule(tmp_path, monkeypatch):
    run = Run(tmp_path)
    run.start({"dataset": "t", "ids": ["q0"], "methods": ["ircot", "flare"], "contexts": {}})
    for name in ("ircot", "flare"):
        run.append({"method": name, "id": "q0", "answer": "Born in Kelmor.",
                    "retrieved_titles": [], "f1": 0.0, "sentences": 1,
                    "retrieved_sentences": 0, "lm_calls": 1, "seconds": 0.1})
    run.close()
    monkeypatch.setattr("activerag.evaluation.evaluate.load_dataset", lambda name: [KELMOR])
    summary = rescore(run)["summary"]
    assert summary["ircot"]["f1"] == pytest.approx(0.5)  # "born in kelmor": precision 1/3
    assert summary["ircot"]["f1_flare_rule"] == 0.0 and summary["flare"]["f1"] == 0.0


def test_the_table_shows_both_numbers_only_where_they_differ():
    rows = [{"method": m, "id": "q0", "em": 0.0, "f1": f1, "sentences": 1,
             "retrieved_sentences": 0, "seconds": 0.1, **extra}
            for m, f1, extra in (("flare", 0.0, {}),
                                 ("ircot", 0.5, {"em_flare_rule": 0.0, "f1_flare_rule": 0.0}))]
    table = markdown_table(summarise_methods(rows, ["flare", "ircot"]))
    header, _, flare_row, ircot_row = table.splitlines()
    assert "f1_flare_rule" in header
    assert flare_row.split(" | ")[4] == "-"
    assert ircot_row.split(" | ")[4].startswith("0.000") and ircot_row.split(" | ")[3] != "-"
