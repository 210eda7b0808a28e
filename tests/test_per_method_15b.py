"""results/per_method_15b.py (tables 3, 4 and 6 at 1.5B: one run folder a method): the table is on
the questions every run finished, marked partial below its total, whatever order they finished
in; a missing run writes nothing; the default model's numbers beside it are on the same
questions."""

import json
from pathlib import Path
from typing import Any

import pytest

IDS = [f"q{i}" for i in range(8)]


@pytest.fixture()
def t15(results_script: Any) -> Any:
    return results_script("per_method_15b")


def write_run(method: str, ids: list[str], f1: float, reverse: bool = False,
              spread: bool = False) -> None:
    folder = Path(f"runs/t-{method}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"ids": IDS if len(ids) <= len(IDS) else ids}))
    rows = [{"method": method, "id": q, "em": 0.0,
             "f1": f1 * ((i * 7 % 11) + i / 3) / 12 if spread else f1 if i % 2 else f1 / 2,
             "gold_title_recall": 0.5, "sentences": 2, "retrieved_sentences": 1, "lm_calls": 1,
             "retrieval_steps": 1, "prompt_tokens": 10, "generated_tokens": 5,
             "answer_tokens": 4, "seconds": 0.5} for i, q in enumerate(ids)]
    rows = rows[::-1] if reverse else rows
    (folder / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def lines_of(rows: list[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    return [f"extra on {len({r['id'] for r in rows})} questions"]


def test_the_table_is_on_the_questions_every_run_finished_and_says_partial(t15: Any) -> None:
    write_run("none", IDS, 0.2)
    write_run("single", IDS[:5], 0.4)
    write_run("flare", IDS[2:7], 0.6)  # shares q2-q4 with single
    rows = t15.one_run_a_method("t-n8", "t", ["none", "single", "flare"], 8, "title", "plot",
                                lines_of)
    assert sorted({r["id"] for r in rows}) == ["q2", "q3", "q4"]
    text = Path("results/t-n8.md").read_text()
    assert text.startswith("**Partial: the 3 of the 8 questions every run finished")
    assert "(n=3)" in text and text.rstrip().endswith("extra on 3 questions")
    summary = json.loads(Path("results/t-n8.json").read_text())
    assert summary["flare"]["n"] == 3
    scores = json.loads(Path("results/t-n8-scores.json").read_text())
    assert sorted(scores["methods"]["none"]) == ["q2", "q3", "q4"]
    assert Path("results/t-n8.png").stat().st_size > 0


def test_a_table_every_run_finished_is_not_marked_partial(t15: Any) -> None:
    for m in ("none", "flare"):
        write_run(m, IDS, 0.5)
    t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "title", "plot", lines_of)
    assert not Path("results/t-n8.md").read_text().startswith("**Partial")


@pytest.mark.parametrize("runs", [["none"], []])
def test_a_missing_run_writes_nothing(t15: Any, runs: list[str]) -> None:
    for m in runs:
        write_run(m, IDS, 0.5)
    assert t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "t", "p", lines_of) is None
    assert not list(Path("results").iterdir())


def test_a_run_sharing_no_question_writes_nothing(t15: Any) -> None:
    write_run("none", IDS[:3], 0.5)
    write_run("flare", IDS[3:], 0.5)
    assert t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "t", "p", lines_of) is None
    assert not list(Path("results").iterdir())


def test_the_default_models_numbers_beside_are_on_the_same_questions(t15: Any) -> None:
    small: dict[str, Any] = {
        "fields": ["em", "f1", "gold_title_recall", "lm_calls", "retrieval_steps"],
        "methods": {m: {q: [0.0, f1, 0.5, 1, 1] for q in IDS}
                    for m, f1 in (("none", 0.1), ("flare", 0.3))}}
    small["methods"]["flare"]["q0"][1] = 1.0  # a question the 1.5B's table leaves out
    Path("results/small-scores.json").write_text(json.dumps(small))
    write_run("none", IDS[1:], 0.2)
    write_run("flare", IDS[1:], 0.6)
    claims = [t15_claim("flare", "none")]
    extra = t15.judged_beside(claims, "small-scores.json", ["none", "flare"], "T")
    t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "title", "plot", extra)
    text = Path("results/t-n8.md").read_text()
    assert "| flare beats none | flare - none: +0.286" in text
    assert "| both: the 1.5B's 7 | flare | 0.300 [0.300, 0.300] |" in text  # q0's 1.0 left out
    assert "a cache hit for the next; LM calls" in text  # no shared request named


def judged_none_and_flare(t15: Any, **beside: str) -> str:
    """The table of a none and a flare run on every question, the default model's scores beside
    (judged_beside given BESIDE); its text."""
    write_run("none", IDS, 0.2)
    write_run("flare", IDS, 0.6)
    Path("results/small-scores.json").write_text(json.dumps(
        {"fields": ["em", "f1"], "methods": {m: {q: [0.0, 0.1] for q in IDS}
                                             for m in ("none", "flare")}}))
    extra = t15.judged_beside([t15_claim("flare", "none")], "small-scores.json",
                              ["none", "flare"], "T", **beside)
    t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "title", "plot", extra)
    return Path("results/t-n8.md").read_text()


def test_the_note_on_seconds_names_the_request_two_methods_share(t15: Any) -> None:
    text = judged_none_and_flare(t15, shared="flare's first draft is none's answer")
    assert "a cache hit for the next (flare's first draft is none's answer); LM calls" in text


def test_a_method_another_table_ran_is_read_from_its_folder(t15: Any) -> None:
    write_run("none", IDS, 0.2)
    write_run("flare", IDS[:5], 0.6)
    Path("runs/t-flare").rename("runs/family-flare")
    assert t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "t", "p", lines_of) is None
    rows = t15.one_run_a_method("t-n8", "t", ["none", "flare"], 8, "t", "p", lines_of,
                                {"flare": "family-flare"})
    assert len({r["id"] for r in rows}) == 5
    assert json.loads(Path("results/t-n8.json").read_text())["flare"]["f1"] == pytest.approx(
        (3 * 0.3 + 2 * 0.6) / 5)


def test_a_note_on_the_default_models_numbers_follows_them(t15: Any) -> None:
    text = judged_none_and_flare(t15, note="Its flare ran other settings.")
    assert text.rstrip().endswith("Its flare ran other settings.")
    assert text.index("### ... and EM") < text.index("Its flare ran other settings.")


def t15_claim(method: str, against: str) -> Any:
    from after_flare_rows import Claim

    return Claim(f"{method} beats {against}", method, against)



def test_the_intervals_do_not_depend_on_the_order_questions_finished(t15: Any) -> None:
    import shutil

    tables = []
    for reverse in (False, True):
        shutil.rmtree("runs", ignore_errors=True)
        twelve = [f"q{i}" for i in range(12)]  # (with 8 values both orders' bounds coincide)
        write_run("none", twelve, 0.2, reverse=reverse, spread=True)
        write_run("flare", twelve, 0.6, reverse=not reverse, spread=True)
        t15.one_run_a_method("t-n12", "t", ["none", "flare"], 12, "title", "plot", lines_of)
        tables.append(Path("results/t-n12.md").read_text())
    assert tables[0] == tables[1]
