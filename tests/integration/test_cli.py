"""The command line against the real server and the demo store."""

import json

import pytest

from activerag.cli import main

pytestmark = pytest.mark.integration


def test_ask_json(vllm_url, demo_store, capsys):
    question = "In which country are the headquarters of Shatil Guild?"
    rc = main(["ask", "--json", "--theta", "1.0", "--max-sentences", "2", "--base-url", vllm_url,
               "--store", str(demo_store), question])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer"].strip()
    assert all(step["retrieved"] for step in out["trace"])
    # a draft a sentence, and a regeneration unless the retrieval brought the draft's documents
    kept = sum(bool(step.get("redrafted")) for step in out["trace"])
    assert out["lm_calls"] == 2 * len(out["trace"]) - kept


def test_ask_reports_bad_input_without_a_traceback(vllm_url, demo_store, capsys):
    assert main(["ask", "  ", "--base-url", vllm_url, "--store", str(demo_store)]) == 2
    assert "question is empty" in capsys.readouterr().err


def test_eval_on_demo_questions(vllm_url, demo_store, tmp_path, capsys):
    run = tmp_path / "run"
    rc = main(["eval", "--dataset", "demo", "--n", "2", "--methods", "flare,single,none",
               "--max-sentences", "3", "--base-url", vllm_url, "--store", str(demo_store),
               "--run", str(run)])
    assert rc == 0
    result = json.loads((run / "summary.json").read_text())
    assert len((run / "examples.jsonl").read_text().splitlines()) == 6
    assert "| flare |" in capsys.readouterr().out
    summary = result["summary"]
    assert set(summary) == {"flare", "single", "none"}
    assert summary["none"]["retrievals"] == 0 and summary["single"]["retrievals"] == 2
    assert summary["single"]["lm_calls"] == 2
    assert summary["flare"]["lm_calls"] >= 2
    assert 0.0 <= summary["flare"]["retrieval_rate"] <= 1.0
    assert summary["single"]["gold_title_recall"] > 0


def test_demo_says_whether_each_answer_matches_the_gold(vllm_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_BASE_URL", vllm_url)
    monkeypatch.setenv("ACTIVERAG_STORE_DIR", str(tmp_path / "store"))
    assert main(["demo", "--n", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("Q (2-hop):") == 1 and out.count("Q (1-hop):") == 1
    verdicts = out.count("-> matches the gold") + out.count("-> does NOT match the gold")
    assert verdicts == 2
    assert "of 2 demo answers match the gold" in out


def test_ask_with_the_entropy_trigger_against_the_real_server(vllm_url, demo_store, capsys):
    question = "In which country are the headquarters of Shatil Guild?"
    rc = main(["ask", "--json", "--trigger", "entropy", "--theta", "1.0", "--max-sentences", "2",
               "--base-url", vllm_url, "--store", str(demo_store), question])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    # θ = 1 fires on any doubt: a 135M model is never certain of a whole sentence
    assert out["trace"] and all(step["retrieved"] for step in out["trace"])
