"""Runs that survive kill -9: `activerag ask --thread` in a process of its own against the real
server and the demo store, killed once it has accepted a sentence, then asked again."""

import json
import os
import signal
import sqlite3
import time

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
    deadline = time.monotonic() + 300
    accepted = []
    while not accepted:
        assert first.poll() is None, f"the run ended before it was killed: {first.stderr.read()}"
        assert time.monotonic() < deadline, "no sentence was accepted within 300 s"
        time.sleep(0.2)
        if checkpoints.exists():
            try:
                accepted = stored(checkpoints)[0].values.get("trace", [])
            except sqlite3.OperationalError:  # the tables are being made
                pass
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    state, _ = stored(checkpoints)
    before = state.values["trace"]
    assert state.next, "the killed run left nothing to finish"

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
    while not (checkpoints.exists() and _has_state(checkpoints)):
        assert first.poll() is None
        time.sleep(0.2)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    # the same method and settings as the killed run (another method or other settings are
    # refused first, for that reason: test_durable.py)
    rc = main(["ask", "Who founded Trouselerk Company?", "--theta", "1.0", "--max-sentences", "4",
               "--base-url", vllm_url, "--store", str(demo_store), "--thread", "t",
               "--checkpoints", str(checkpoints)])
    assert rc == 2
    assert "unfinished run of another question" in capsys.readouterr().err


def _has_state(checkpoints):
    try:
        return bool(stored(checkpoints)[0].values)
    except sqlite3.OperationalError:
        return False
