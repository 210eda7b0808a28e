"""`activerag eval`/`sweep` refuse sizes that cannot run, and dataset rows are read as meant:
unique ids, a string answer or gold title as one item (issue #19, item 10)."""

import json

import pytest

from activerag import cli
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import load_dataset, user_jsonl

NOWHERE = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ACTIVERAG_STORE_DIR", raising=False)


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("option", "value"), [("--concurrency", "0"), ("--concurrency", "-2"),
                                               ("--n", "0"), ("--n", "-1")])
def test_eval_refuses_a_concurrency_or_size_below_one(capsys, tmp_path, option, value):
    err = refused(capsys, ["eval", "--dataset", "demo", "--methods", "none", "--run",
                           str(tmp_path / "run"), "--base-url", NOWHERE, option, value])
    assert f"{option.lstrip('-')} must be at least 1, got {value}" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("option", "value"), [("--concurrency", "0"), ("--n", "0")])
def test_sweep_refuses_a_concurrency_or_size_below_one(capsys, tmp_path, option, value):
    err = refused(capsys, ["sweep", "theta", "--dataset", "demo", "--out", str(tmp_path / "out"),
                           "--base-url", NOWHERE, option, value])
    assert f"{option.lstrip('-')} must be at least 1, got {value}" in err


@pytest.mark.parametrize("n", [0, -1])
def test_load_dataset_refuses_a_size_below_one(n):
    with pytest.raises(ActiveRagError, match=f"n must be at least 1, got {n}"):
        load_dataset("demo", n)


def test_load_dataset_keeps_the_first_n_and_none_keeps_all():
    assert len(load_dataset("demo", 3)) == 3
    assert len(load_dataset("demo")) == 48


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_duplicate_ids_are_refused_by_name(tmp_path):
    path = write_jsonl(tmp_path / "dup.jsonl", [
        {"id": "q1", "question": "A?", "answer": "a"},
        {"id": "q2", "question": "B?", "answer": "b"},
        {"id": "q1", "question": "C?", "answer": "c"}])
    with pytest.raises(ActiveRagError, match="'q1'") as caught:
        load_dataset(str(path), 1)
    assert "q2" not in str(caught.value)


def test_rows_without_ids_get_distinct_ones(tmp_path):
    path = write_jsonl(tmp_path / "noid.jsonl", [{"question": "A?", "answer": "a"},
                                                 {"question": "B?", "answer": "b"}])
    assert [e.id for e in load_dataset(str(path))] == ["row-1", "row-2"]


def test_a_string_answer_or_gold_title_is_one_item(tmp_path):
    path = write_jsonl(tmp_path / "one.jsonl", [
        {"question": "Capital of France?", "answer": "Paris", "gold_titles": "Paris"},
        {"question": "Capital of Italy?", "answers": "Rome", "gold_titles": ["Rome", "Italy"]},
        {"input": "Capital of Spain?", "context": "Madrid is the capital.", "answers": "Madrid",
         "gold_titles": "Madrid"}])
    rows = user_jsonl(path)
    assert [(e.answers, e.gold_titles) for e in rows] == [
        (["Paris"], ["Paris"]), (["Rome"], ["Rome", "Italy"]), (["Madrid"], ["Madrid"])]


def test_gold_titles_that_are_neither_a_string_nor_a_list_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"question": "A?", "answer": "a",
                                                 "gold_titles": {"t": 1}}])
    with pytest.raises(ActiveRagError, match="gold_titles"):
        user_jsonl(path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("kind", "variants", "said"), [
    ("beta", "beta=0.0,beta=0.5", "has no variant 'beta=0.5'; its variants: beta=0.0, beta=0.2"),
    ("beta", "beta=0.0,beta=0.0", "needs each variant once"),
    ("theta", "", "needs at least one variant"),
    ("all", "theta=0.8", "give its kind (theta, beta, ...) instead of 'all'")])
def test_sweep_refuses_variants_it_does_not_have(capsys, tmp_path, kind, variants, said):
    err = refused(capsys, ["sweep", kind, "--dataset", "demo", "--out", str(tmp_path / "out"),
                           "--base-url", NOWHERE, "--variants", variants])
    assert said in err
    assert not (tmp_path / "out").exists()
