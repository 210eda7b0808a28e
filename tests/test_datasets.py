"""Loaders of the shared evaluation data (read in place from ../shared/data)."""

import json

import pytest

from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import (
    DATASETS,
    demo,
    load_dataset,
    twowiki,
    twowiki500,
    twowiki500_alias_counts,
    user_jsonl,
)
from activerag.settings import shared_data


@pytest.fixture
def data():
    """The shared evaluation data; CI has it beside the checkout, a bare clone may not."""
    try:
        return shared_data()
    except ActiveRagError:
        pytest.skip("../shared/data not found; set ACTIVERAG_DATA to run the loader tests")


@pytest.mark.parametrize(("name", "size", "kind"), [
    ("2wiki", 1000, "short"), ("2wiki500", 500, "short"), ("hotpotqa", 300, "short"),
    ("strategyqa", 229, "yesno"), ("asqa", 948, "long"), ("nq", 3610, "short"),
    ("demo", 48, "short"),
])
def test_each_dataset_loads_with_what_scoring_needs(name, size, kind, request):
    if name != "demo":
        request.getfixturevalue("data")
    rows = DATASETS[name]()
    assert len(rows) == size
    assert all(r.question and r.kind == kind for r in rows)
    assert len({r.id for r in rows}) == size
    if name in ("2wiki", "2wiki500", "hotpotqa", "demo"):
        assert all(len(r.gold_titles) >= 1 for r in rows)
    if kind == "long":
        assert all(r.short_answers for r in rows)
    if kind == "yesno":
        assert {r.answers[0] for r in rows} == {"yes", "no"}


def test_first_n_and_unknown_names(data):
    assert [e.id for e in load_dataset("2wiki", 3)] == [e.id for e in DATASETS["2wiki"]()[:3]]
    with pytest.raises(ActiveRagError, match="unknown dataset"):
        load_dataset("nope")


def test_user_jsonl(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"question": "Q?", "answer": "A", "gold_titles": ["T"]}) + "\n")
    [ex] = user_jsonl(path)
    assert (ex.id, ex.answers, ex.gold_titles) == ("row-1", ["A"], ["T"])
    path.write_text(json.dumps({"q": "missing"}) + "\n")
    with pytest.raises(ActiveRagError, match="needs a 'question'"):
        load_dataset(str(path))


def test_paper_exemplars_are_read_at_run_time(data):
    from activerag.nodes.prompts import paper_task

    cot, sa = paper_task("cot").exemplars, paper_task("self_ask").exemplars
    assert len(cot) == 8 and len(sa) == 8
    assert all(e.answer.endswith(".") and "So the answer is" in e.answer for e in cot)
    assert all(e.answer.startswith("Are follow up questions needed here:") for e in sa)
    assert all("\nSo the final answer is: " in e.answer for e in sa)
    sqa, asqa = paper_task("strategyqa"), paper_task("asqa").exemplars
    assert len(sqa.exemplars) == 6
    assert all(e.answer.rstrip(".").endswith(("yes", "no")) for e in sqa.exemplars)
    assert all("So the final answer is" in e.answer for e in sqa.exemplars)
    assert len(asqa) == 12 and all(e.answer.startswith("We need to consider") for e in asqa)


def test_strategyqa_questions_are_put_as_yes_no_tasks(data):
    from activerag.nodes.prompts import STRATEGYQA_QUESTION_LINE, answer_prompt, paper_task

    task = paper_task("strategyqa")
    assert task.question_line == STRATEGYQA_QUESTION_LINE
    prompt = answer_prompt("Would a pear sink in water?", "", [], "plain", task)
    lead = "Generate a yes or no answer to the following question.\nQuestion: "
    assert prompt.count(lead) == 7  # 6 exemplars and the test question
    assert lead + "Would a pear sink in water?\nAnswer:" in prompt
    assert "So the final answer is <yes or no>" in prompt.split("\n\n")[0]


def test_demo_groups_by_hops(monkeypatch):
    questions = [{"id": "a", "question": "A?", "answers": ["x"], "gold_titles": ["T"], "hops": 1},
                 {"id": "b", "question": "B?", "answers": ["y"], "gold_titles": ["T"], "hops": 2},
                 {"id": "c", "question": "C?", "answers": ["z"], "gold_titles": ["T"]}]
    monkeypatch.setattr("activerag.evaluation.datasets.load_demo_questions", lambda: questions)
    assert [(e.id, e.group) for e in demo()] == [("a", "one-hop"), ("b", "two-hop"), ("c", "")]
    monkeypatch.undo()
    groups = [e.group for e in demo()]
    assert (groups.count("one-hop"), groups.count("two-hop")) == (24, 24)


def test_twowiki500_groups_by_type_and_borrows_the_aliases_it_can(data):
    rows = {e.id: e for e in twowiki500()}
    assert {e.group for e in rows.values()} == {
        "compositional", "comparison", "bridge_comparison", "inference"}
    # In the 1,000-question file too: its aliases join the gold string.
    assert rows["2bd4454c0bda11eba7f7acde48001122"].answers == [
        "Tisch", "New York University Film School",
        "New York University Tisch School of the Arts", "Tisch School of the Arts"]
    # Not there: the single gold string.
    assert rows["100c512a0bde11eba7f7acde48001122"].answers == ["Cork"]
    # 36 share an id with the 1,000-question file; 10 of those have an empty alias list
    # there and 8 more only repeat the gold string.
    assert twowiki500_alias_counts() == {
        "questions": 500, "in_test1000": 36, "with_aliases": 26, "with_extra_answers": 18}
    assert {e.group for e in twowiki()} == {""}


@pytest.mark.parametrize("name", ["2wiki", "2wiki500"])
def test_every_gold_answer_can_be_matched_exactly(name, data):
    """Written as the paper's answer sentence, every gold answer scores EM 1 (abbreviations
    such as "Edward L. Cahn" and "St. Louis" included)."""
    from activerag.answers import extract_answer
    from activerag.evaluation.metrics import exact_match

    missed = [g for ex in DATASETS[name]() for g in ex.answers
              if exact_match(extract_answer(f"So the answer is {g}."), [g]) != 1.0]
    assert missed == []
