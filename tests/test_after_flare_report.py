"""results/after_flare.py: a lost run folder keeps its committed row (a method's or a swept
variant's), a table none of whose folders is left keeps its committed files, and the intervals
do not depend on the order in which a run's questions finished."""

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "results" / "after_flare.py"
IDS = [f"q{i}" for i in range(12)]


@pytest.fixture()
def af(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # its rows module beside it
    (tmp_path / "results").mkdir()
    spec = importlib.util.spec_from_file_location("after_flare_under_test", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(method: str, qid: str, f1: float, calls: int = 1) -> dict[str, Any]:
    return {"method": method, "id": qid, "em": float(f1 == 1.0), "f1": f1,
            "gold_title_recall": 0.5, "sentences": 2, "retrieved_sentences": 1,
            "lm_calls": calls, "retrieval_steps": 1, "prompt_tokens": 10,
            "generated_tokens": 5, "answer_tokens": 4, "seconds": 0.5}


def write_run(folder: Path, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"ids": IDS}))
    (folder / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def scored(i: int, shift: float) -> float:
    return round((i * 7 % 5) / 4 * 0.9 + shift, 3)


def table(af: Any, reverse: bool = False, gone: tuple[str, ...] | None = ("ircot",)) -> Any:
    rows = [row(m, q, scored(i, s), c) for m, s, c in (("flare", 0.1, 6), ("none", 0.0, 1))
            for i, q in enumerate(IDS)]
    write_run(Path("runs/main"), rows[::-1] if reverse else rows)
    return af.Table("t-n12", "main", {"main": None, "gone": gone and list(gone)}, "test table",
                    claims=["ircot", "flare"])


def test_rows_come_in_question_order_whatever_order_they_finished(af: Any) -> None:
    af.report(table(af))
    forward = Path("results/t-n12.md").read_text()
    for f in Path("runs").iterdir():
        for p in f.iterdir():
            p.unlink()
        f.rmdir()
    af.report(table(af, reverse=True))
    assert Path("results/t-n12.md").read_text() == forward


@pytest.mark.parametrize("gone", [("ircot",), None])  # the folder's methods named, or all
def test_a_lost_run_folder_keeps_its_committed_row(af: Any, gone: tuple[str, ...] | None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    t = table(af, gone=gone)
    committed = {"n": 12, "f1": 0.4, "f1_ci": [0.3, 0.5], "em": 0.1, "em_ci": [0.0, 0.2],
                 "lm_calls_per_question": 4.0, "retrieval_rate": 0.5,
                 "retrievals_per_question": 3.0, "seconds_per_question": 9.0}
    Path("results/t-n12.json").write_text(json.dumps({"ircot": committed}))
    Path("results/t-n12-scores.json").write_text(json.dumps({
        "fields": ["em", "f1", "gold_title_recall", "lm_calls", "retrieval_steps"],
        "methods": {"ircot": {q: [0.0, 0.4, 0.5, 4, 3] for q in IDS}}}))
    af.report(t)
    text = Path("results/t-n12.md").read_text()
    assert "ircot: the row is as committed" in text
    assert "| ircot | 12 | 0.100 [0.000, 0.200] | 0.400 [0.300, 0.500]" in text
    assert "ircot - flare:" in text  # the claim paired from the committed scores
    saved = json.loads(Path("results/t-n12-scores.json").read_text())["methods"]
    assert set(saved) == {"flare", "none", "ircot"}  # written back, so it is not lost next time
    assert "taken from results/t-n12.json" in capsys.readouterr().out


def test_a_run_cut_short_is_not_on_the_pareto_front(af: Any) -> None:
    t = table(af)
    write_run(Path("runs/gone"), [row("ircot", q, 1.0, 2) for q in IDS[:3]])  # 3 of 12
    af.report(t)
    text = Path("results/t-n12.md").read_text()
    assert "| ircot | 3 |" in text
    front = text.split("Pareto front of F1 against LM calls per question: ")[1].split(" (")[0]
    assert front == "none, flare"


def test_each_swept_method_is_labelled_by_its_own_threshold(af: Any) -> None:
    t = table(af)
    t = af.Table(t.name, t.questions, t.sources, t.title, sweeps=["sweep"], claims=t.claims)
    for method, ctx in (("flare_etc", {"etc_threshold": 0.9}), ("flare", {"theta": 0.4}),
                        ("dragin_lite", {"dragin_threshold": 1.3})):
        folder = Path("runs/sweep") / method
        write_run(folder, [row(method, q, 0.5, 3) for q in IDS])
        (folder / "config.json").write_text(json.dumps({"ids": IDS, "contexts": {method: ctx}}))
    af.report(t)
    text = Path("results/t-n12.md").read_text()
    for label in ("flare_etc t=0.9", "flare θ=0.4", "dragin_lite t=1.3"):
        assert f"| {label} | 12 |" in text
    assert "ETC's threshold at 0.9 and 1.7" in text


def swept_table(af: Any) -> Any:
    t = table(af, gone=None)
    t = af.Table(t.name, t.questions, t.sources, t.title, sweeps=["sweep"], claims=t.claims)
    folder = Path("runs/sweep/flare_etc-0.9")
    write_run(folder, [row("flare_etc", q, scored(i, 0.05), 3) for i, q in enumerate(IDS)])
    (folder / "config.json").write_text(json.dumps({"ids": IDS, "contexts": {
        "flare_etc": {"etc_threshold": 0.9}}}))
    return t


def swept_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| flare_etc t=0.9 |"))


def test_a_lost_sweep_folder_keeps_its_committed_row(af: Any,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    t = swept_table(af)
    af.report(t)
    before = Path("results/t-n12.md").read_text()
    shutil.rmtree(Path("runs/sweep/flare_etc-0.9"))  # lost with its machine; the main run stays
    af.report(t)
    after = Path("results/t-n12.md").read_text()
    assert swept_line(after) == swept_line(before)  # its summary and its p against flare
    assert "taken from results/t-n12-sweeps.json" in capsys.readouterr().out
    assert after.split("Pareto front")[1] == before.split("Pareto front")[1]
    saved = json.loads(Path("results/t-n12-scores.json").read_text())["methods"]
    assert "flare_etc t=0.9" in saved  # written back, so it is not lost the next time either


def test_without_its_questions_folder_a_table_takes_the_ids_of_its_committed_scores(
        af: Any) -> None:
    t = swept_table(af)
    af.report(t)
    before = Path("results/t-n12.md").read_text()
    shutil.rmtree(Path("runs/main"))  # the questions folder and flare's and none's rows: all lost
    af.report(t)
    after = Path("results/t-n12.md").read_text()
    assert "flare, none: the rows are as committed" in after
    assert after.split("#### The published claims")[1] == before.split("#### The published "
                                                                       "claims")[1]


def test_a_table_none_of_whose_folders_is_left_keeps_its_committed_files(
        af: Any, capsys: pytest.CaptureFixture[str]) -> None:
    t = swept_table(af)
    af.report(t)
    files = {p: p.read_bytes() for p in Path("results").iterdir()}
    shutil.rmtree(Path("runs"))
    Path("runs").mkdir()
    af.report(t)
    assert {p: p.read_bytes() for p in Path("results").iterdir()} == files
    assert "skipped t-n12: none of its run folders" in capsys.readouterr().out


def test_a_borrowed_method_comes_from_the_other_tables_committed_results_and_only_it(
        af: Any) -> None:
    table(af)  # runs/main: flare and none on the 12 questions
    summary = {"n": 12, "f1": 0.3, "f1_ci": [0.2, 0.4], "em": 0.1, "em_ci": [0.0, 0.2],
               "lm_calls_per_question": 1.0, "retrieval_rate": 0.0,
               "retrievals_per_question": 1.0, "seconds_per_question": 2.0}
    Path("results/other.json").write_text(json.dumps({"single": summary, "ircot": summary}))
    Path("results/other-scores.json").write_text(json.dumps({
        "fields": ["em", "f1", "gold_title_recall", "lm_calls", "retrieval_steps"],
        "methods": {m: {q: [0.0, 0.3, 0.5, 1, 1] for q in IDS} for m in ("single", "ircot")}}))
    t = af.Table("t-n12", "main", {"main": None}, "test table", claims=["flare"],
                 borrowed={"other": ["single"]})
    af.report(t)
    text = Path("results/t-n12.md").read_text()
    assert "| single | 12 | 0.100 [0.000, 0.200] | 0.300 [0.200, 0.400]" in text
    assert "| ircot |" not in text  # the other table's methods that were not asked for stay there
    assert "t-n12-scores.json or other-scores.json" in text
    saved = json.loads(Path("results/t-n12-scores.json").read_text())["methods"]
    assert set(saved) == {"flare", "none", "single"}


def test_a_method_run_in_two_folders_side_by_side_is_taken_from_both_once(af: Any) -> None:
    table(af)  # runs/main: flare and none
    write_run(Path("runs/a"), [row("ircot", q, 1.0, 2) for q in IDS[:8]])
    write_run(Path("runs/b"), [row("ircot", q, 0.0, 2) for q in IDS[4:]])  # 4 of them again
    af.report(af.Table("t-n12", "main", {"main": None, "a": None, "b": ["ircot"]}, "test table",
                       claims=["ircot", "flare"]))
    text = Path("results/t-n12.md").read_text()
    assert "| ircot | 12 | 0.667 [" in text  # 8 from a (1.0), the 4 only b holds (0.0)


def test_the_beta_table_judges_table_5_not_the_after_flare_claims(af: Any) -> None:
    """The β sweep's report judges Table 5's claims on the sweep's variants, not IRCoT's."""
    rows = [row(m, q, scored(i, s)) for m, s in (("beta=0.0", 0.0), ("flare", 0.1))
            for i, q in enumerate(IDS)]
    text = af.claims_table(rows, af.BETA)
    assert "flare - beta=0.0: +0.100" in text  # β=0.4 per token is FLARE's own setting
    assert "IRCoT" not in text and "not measured" in text  # the word variants are not in ROWS


@pytest.mark.parametrize("text", ["An uncertainty gate matches DRAGIN at fewer LM calls",
                                  "Explicit queries (a question per uncertain span) match "
                                  "masked ones (Table 6)"])
def test_a_claim_of_equality_is_judged_by_its_interval_not_its_p(af: Any, text: str) -> None:
    claim = af.Claim(text, "a", "b", equal=True)
    wide = {"ci": (-0.088, 0.035), "p": 0.45, "diff": -0.025, "calls": (7.6, 6.5)}
    assert af.verdict(claim, wide) == ("not shown: the interval is too wide to call them "
                                       "equal (±0.05 F1)")
    assert af.verdict(claim, {**wide, "ci": (-0.04, 0.03)}).startswith("shown: equal")
    # what decides is the claim's kind, not its wording
    better = af.Claim(text, "a", "b")
    assert af.verdict(better, {**wide, "ci": (-0.04, 0.03)}) == "not shown (p >= 0.05)"
    assert af.verdict(better, {**wide, "p": 0.01, "diff": 0.06}) == "shown"


def test_the_claims_of_equality_are_the_ones_that_say_so(af: Any) -> None:
    every = [c for claims in (af.CLAIMS, *af.JUDGED.values()) for c in claims]
    assert {c.method for c in every if c.equal} == {*af.GATES, "adaptive_rag", "flare_explicit",
                                                    "replug"}
    assert all(c.equal == (" match" in c.text or "keeps" in c.text) for c in every)
