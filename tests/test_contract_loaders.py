"""Every dataset loader runs on a tiny literal file (issue #38): each name of DATASETS, read
from $ACTIVERAG_DATA in tmp_path, gives its examples with every field it fills; a user's jsonl
row without a question or without answers is refused. The shared data itself is not needed
(tests/test_datasets.py checks the real files where they are)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activerag.errors import ActiveRagError
from activerag.evaluation import datasets
from activerag.evaluation.datasets import DATASETS, Example, load_dataset, user_jsonl

TWOWIKI_1000 = [
    {"id": "w1", "question": "Who directed Film A?", "answer": "Ann Lee",
     "answer_aliases": ["A. Lee"], "supporting_facts": ["Film A", "Ann Lee"]},
    {"id": "w2", "question": "Where was Bo born?", "answer": "Gepu"},
]
TWOWIKI_500 = {
    "_1": {"0": "w1", "1": "w9"},
    "question": {"0": "Who directed Film A?", "1": "Which is older?"},
    "answer": {"0": "Ann Lee", "1": "Film B"},
    "supporting_facts": {"0": [["Film A", 0], ["Ann Lee", 2], ["Film A", 1]],
                         "1": [["Film B", 0], ["Film C", 0]]},
    "type": {"0": "compositional", "1": "comparison"},
}
HOTPOT = [{"id": 5, "question": "Which river?", "answer": "Vedria",
           "supporting_facts": {"title": ["Kelmor", "Gepu", "Kelmor"], "sent_id": [0, 1, 2]}}]
NQ = [{"question": "who sang it", "answer": ["Ann", "Ann Lee"]},
      {"question": "when was it", "answer": "1950"}]

FILES: dict[str, dict[str, Any]] = {
    "2wiki": {datasets.TWOWIKI_1000: TWOWIKI_1000},
    "2wiki500": {datasets.TWOWIKI_1000: TWOWIKI_1000, datasets.TWOWIKI_500: TWOWIKI_500},
    "hotpotqa": {datasets.HOTPOT_SPLIT.format(split="dev"): HOTPOT},
    "strategyqa": {"strategyqa/strategyqa_dev_eladsegal.json":
                   [{"qid": "s1", "question": "Is ice cold?", "answer": True}]},
    "asqa": {"asqa/asqa_dev_agentic-disambiguation.json":
             [{"id": 7, "question": "Who won?", "annotations": [{"long_answer": "Ann won."}],
               "qa_pairs": [{"short_answers": ["Ann"]}]}]},
    "nq": {"nq/NQ-open.dev.jsonl": NQ},
}
"""Each shared-data loader's files (a .jsonl path gets one row a line)."""
EXPECTED: dict[str, list[Example]] = {
    "2wiki": [Example("w1", "Who directed Film A?", ["Ann Lee", "A. Lee"], ["Film A", "Ann Lee"]),
              Example("w2", "Where was Bo born?", ["Gepu"], [])],
    "2wiki500": [Example("w1", "Who directed Film A?", ["Ann Lee", "A. Lee"],
                         ["Ann Lee", "Film A"], group="compositional"),
                 Example("w9", "Which is older?", ["Film B"], ["Film B", "Film C"],
                         group="comparison")],
    "hotpotqa": [Example("5", "Which river?", ["Vedria"], ["Gepu", "Kelmor"])],
    "strategyqa": [Example("s1", "Is ice cold?", ["yes"], kind="yesno")],
    "asqa": [Example("7", "Who won?", ["Ann won."], kind="long", short_answers=[["Ann"]])],
    "nq": [Example("nq-0", "who sang it", ["Ann", "Ann Lee"]),
           Example("nq-1", "when was it", ["1950"])],
}


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_DATA", str(tmp_path))

    def put(files: dict[str, Any]) -> None:
        for rel, value in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in value)
                            if rel.endswith(".jsonl") else json.dumps(value))

    return put


def test_every_shared_loader_has_a_literal_file_here():
    assert set(FILES) == set(EXPECTED) == set(DATASETS) - {"demo"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_loader_fills_every_field_from_its_file(data, name):
    data(FILES[name])
    assert load_dataset(name) == EXPECTED[name]
    assert load_dataset(name, 1) == EXPECTED[name][:1]


def test_2wiki500_alias_counts_follow_the_1000_question_file(data):
    data(FILES["2wiki500"])
    assert datasets.twowiki500_alias_counts() == {
        "questions": 2, "in_test1000": 1, "with_aliases": 1, "with_extra_answers": 1}


@pytest.mark.parametrize("row", [
    {"answers": ["x"]},
    {"question": 3, "answers": ["x"]},
    {"question": "Where?"},
    {"question": "Where?", "answer": None},
])
def test_a_user_row_without_a_question_string_or_answers_is_refused(tmp_path, row):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"question": "Fine?", "answers": "yes"}) + "\n"
                    + json.dumps(row) + "\n")
    with pytest.raises(ActiveRagError, match=r"mine\.jsonl:2 needs a 'question' string"):
        user_jsonl(path)
