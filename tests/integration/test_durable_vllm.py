"""Runs that survive kill -9: `activerag ask --thread` in a process of its own against the real
server and the demo store, killed once it has accepted a sentence, then asked again."""

import json

import pytest

from activerag.testing import processes as realprocs
from activerag.testing.processes import thread_state as stored

pytestmark = pytest.mark.integration
QUESTION = "In which city was the founder of Daeselin Company born?"


def ask(vllm_url, demo_store, checkpoints):
    return realprocs.ask(vllm_url, demo_store, checkpoints, QUESTION)


def test_a_run_killed_after_a_sentence_goes_on_from_there(vllm_url, demo_store, tmp_path):
    checkpoints = tmp_path / "threads.sqlite"
    first = ask(vllm_url, demo_store, checkpoints)
    # stopped while its checkpoints are read, so that it cannot finish between read and kill
    state = realprocs.kill_when(first, checkpoints, lambda s: bool(s.values.get("trace")))
    assert stored(checkpoints)[0].values == state.values  # the kill lost nothing it had kept
    before = state.values["trace"]
    assert state.next, f"the run had answered by its first accepted sentence: {before}"

    second = ask(vllm_url, demo_store, checkpoints)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert f"resuming after {len(before)} accepted sentence" in err
    answer = json.loads(out)
    assert answer["trace"][:len(before)] == json.loads(json.dumps(before, default=str))
    assert len(answer["trace"]) > len(before) or answer["answer"]
    _, history = stored(checkpoints)
    # one input checkpoint: the second process went on, it did not start the question again
    assert [c.metadata["source"] for c in history].count("input") == 1

    third = ask(vllm_url, demo_store, checkpoints)
    again, err = third.communicate(timeout=120)
    assert "already answered" in err and json.loads(again)["answer"] == answer["answer"]


def test_an_unfinished_thread_refuses_another_question(vllm_url, demo_store, tmp_path, capsys):
    from activerag.cli import main

    checkpoints = tmp_path / "threads.sqlite"
    first = ask(vllm_url, demo_store, checkpoints)
    realprocs.kill_when(first, checkpoints, lambda s: bool(s.values) and bool(s.next))
    # the same method and settings as the killed run (another method or other settings are
    # refused first, for that reason: test_durable.py)
    rc = main(["ask", "Who founded Trouselerk Company?", "--theta", "1.0", "--max-sentences", "4",
               "--base-url", vllm_url, "--store", str(demo_store), "--thread", "t",
               "--checkpoints", str(checkpoints)])
    assert rc == 2
    assert "unfinished run of another question" in capsys.readouterr().err

