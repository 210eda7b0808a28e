"""Loaders of the shared evaluation data (read in place from ../shared/data)."""

import json

import pytest

from activerag.datasets import DATASETS, load_dataset, user_jsonl
from activerag.errors import ActiveRagError
from activerag.paper import shared_data


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
    ("demo", 24, "short"),
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
    from activerag.paper import paper_exemplars

    cot, sa = paper_exemplars("cot"), paper_exemplars("self_ask")
    assert len(cot) == 8 and len(sa) == 8
    assert all(a.endswith(".") and "So the answer is" in a for _, a in cot)
    assert all(a.startswith("Are follow up questions needed here:") for _, a in sa)
    sqa, asqa = paper_exemplars("strategyqa"), paper_exemplars("asqa")
    assert len(sqa) == 6 and all(a.rstrip(".").endswith(("yes", "no")) for _, a in sqa)
    assert len(asqa) == 12 and all(a.startswith("We need to consider") for _, a in asqa)
