"""`activerag eval` and `activerag ask` from the command line to what they print, over a fake
vLLM and a real BM25 store (issue #38: these commands' last steps, the JSON answer and the
run page's served model, were run by no unit test)."""

import json

from activerag import cli
from activerag.evaluation.evaluate import Run
from activerag.stores.corpus import Corpus
from activerag.testing.fake_lm import Backend, backend

PASSAGES = [("Alpha Beta", "Alpha Beta was born in the city of Gepu."),
            ("Gepu", "Gepu is a small town on the Vedria river."),
            ("Vedria", "Vedria is a river that runs through Gepu and Kelmor.")]
QUESTIONS = [{"id": "q1", "question": "Where was Alpha Beta born?", "answers": ["Gepu"]},
             {"id": "q2", "question": "Which river runs through Gepu?", "answers": ["Vedria"]}]


def store_of(tmp_path):
    """A BM25 store of PASSAGES under TMP_PATH."""
    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in PASSAGES))
    Corpus(tmp_path / "store").ingest(source, dense=False, progress=False)
    return str(tmp_path / "store")


def test_eval_writes_every_row_prints_the_summary_and_names_its_folder(tmp_path, capsys,
                                                                      own_home):
    store = store_of(tmp_path)
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with backend(Backend()) as url:
        code = cli.main(["eval", "--dataset", str(dataset), "--methods", "single,none",
                         "--base-url", url, "--model", "fake-model", "--store", store,
                         "--run", str(tmp_path / "run"),
                         "--max-answer-tokens", "12"])
    assert code == 0
    out = capsys.readouterr().out
    assert "| single |" in out and "| none |" in out
    assert out.rstrip().endswith(f"run folder: {tmp_path / 'run'}")
    rows = Run(tmp_path / "run").rows()
    assert sorted((r["method"], r["id"]) for r in rows) == [
        ("none", "q1"), ("none", "q2"), ("single", "q1"), ("single", "q2")]
    assert (tmp_path / "run" / "summary.md").exists()


def test_ask_json_gives_the_run_s_fields_and_its_page_names_the_served_model(tmp_path, capsys,
                                                                          own_home):
    """`ask --json --html PAGE` without --model: the answer's fields as JSON on stdout, the
    page's path on stderr, and the page names the model the server lists."""
    page = tmp_path / "run.html"
    with backend(Backend(model="listed-model")) as url:
        code = cli.main(["ask", "Where was Alpha Beta born?", "--method", "single",
                         "--base-url", url, "--store", store_of(tmp_path), "--json",
                         "--html", str(page), "--max-answer-tokens", "12"])
    assert code == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert {"question", "answer", "trace", "lm_calls", "retrievals", "retrieved_titles"} <= set(out)
    assert out["question"] == "Where was Alpha Beta born?" and out["lm_calls"] == 1
    assert out["answer"].strip() and out["retrieved_titles"]
    assert f"page: {page}" in captured.err
    assert "listed-model" in page.read_text()
