"""`activerag eval` from its command line to its printed summary, over a fake vLLM and a real
BM25 store: the rows written for every method and question, the summary table printed, and
the run folder named (issue #38: the command's own last steps were run by no unit test)."""

import json

from fake_backends import Backend, backend

from activerag import cli
from activerag.evaluation.evaluate import Run
from activerag.stores.corpus import Corpus

PASSAGES = [("Alpha Beta", "Alpha Beta was born in the city of Gepu."),
            ("Gepu", "Gepu is a small town on the Vedria river."),
            ("Vedria", "Vedria is a river that runs through Gepu and Kelmor.")]
QUESTIONS = [{"id": "q1", "question": "Where was Alpha Beta born?", "answers": ["Gepu"]},
             {"id": "q2", "question": "Which river runs through Gepu?", "answers": ["Vedria"]}]


def test_eval_writes_every_row_prints_the_summary_and_names_its_folder(tmp_path, capsys,
                                                                      own_home):
    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in PASSAGES))
    Corpus(tmp_path / "store").ingest(source, dense=False, progress=False)
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with backend(Backend()) as url:
        code = cli.main(["eval", "--dataset", str(dataset), "--methods", "single,none",
                         "--base-url", url, "--model", "fake-model", "--store",
                         str(tmp_path / "store"), "--run", str(tmp_path / "run"),
                         "--max-answer-tokens", "12"])
    assert code == 0
    out = capsys.readouterr().out
    assert "| single |" in out and "| none |" in out
    assert out.rstrip().endswith(f"run folder: {tmp_path / 'run'}")
    rows = Run(tmp_path / "run").rows()
    assert sorted((r["method"], r["id"]) for r in rows) == [
        ("none", "q1"), ("none", "q2"), ("single", "q1"), ("single", "q2")]
    assert (tmp_path / "run" / "summary.md").exists()
