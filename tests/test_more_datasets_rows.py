"""The shared-data loaders read the JSON files under $ACTIVERAG_DATA, and an ASQA (long)
answer's row carries its exact match over the short answers beside its ROUGE-L."""

import json

import pytest

from activerag.evaluation.datasets import Example, asqa, shared_json, strategyqa
from activerag.evaluation.rows import score


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_DATA", str(tmp_path))

    def put(rel: str, value) -> None:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))

    return put


def test_a_shared_json_file_is_read_as_it_is(data):
    data("x/rows.json", {"a": [1, 2], "b": "c"})
    assert shared_json("x/rows.json") == {"a": [1, 2], "b": "c"}


def test_strategyqa_rows_become_yes_no_questions(data):
    data("strategyqa/strategyqa_dev_eladsegal.json",
         [{"qid": "s1", "question": "Is ice cold?", "answer": True},
          {"qid": "s2", "question": "Is fire cold?", "answer": False}])
    assert strategyqa() == [Example("s1", "Is ice cold?", ["yes"], kind="yesno"),
                            Example("s2", "Is fire cold?", ["no"], kind="yesno")]


def test_asqa_rows_keep_long_answers_and_each_interpretation_s_short_answers(data):
    data("asqa/asqa_dev_agentic-disambiguation.json",
         [{"id": 7, "question": "Who won?", "annotations": [{"long_answer": "Ann won in 1990."},
                                                           {"long_answer": ""}],
           "qa_pairs": [{"short_answers": ["Ann"]}, {"short_answers": ["1990", "nineteen"]}]}])
    assert asqa() == [Example("7", "Who won?", ["Ann won in 1990."], kind="long",
                              short_answers=[["Ann"], ["1990", "nineteen"]])]


def test_a_long_answer_is_scored_by_exact_match_of_short_answers_and_rouge_l():
    example = Example("7", "Who won?", ["Ann won in 1990."], kind="long",
                      short_answers=[["Ann"], ["1990", "nineteen"]])
    both = score(example, "Ann won in 1990.", [])
    assert both["em"] == 1.0 and both["rouge_l"] == pytest.approx(1.0)
    half = score(example, "It was Ann.", [])
    assert half["em"] == 0.5 and 0.0 < half["rouge_l"] < 1.0
    assert "prediction" not in half and half["gold_title_recall"] is None
