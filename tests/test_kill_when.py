"""kill_when, the kill -9 of the durable-run tests: it reads a run's checkpoints only while the
run is stopped, so that the state it decides on is the state the kill leaves (CI once saw a
run finish between a read and the kill)."""

import subprocess
import sys

import pytest

from activerag.testing.processes import kill_when, process_state


def _sleeper() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            stderr=subprocess.PIPE, text=True)


def test_the_run_is_stopped_while_its_state_is_read_and_killed_on_it(tmp_path):
    checkpoints = tmp_path / "threads.sqlite"
    checkpoints.touch()
    proc = _sleeper()
    seen: list[str] = []

    def ready(state):
        seen.append(process_state(proc.pid))
        return len(seen) == 2

    try:
        kill_when(proc, checkpoints, ready, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert seen == ["T", "T"]  # stopped at each read, let go on between them
    assert proc.returncode == -9


def test_a_run_that_ends_first_or_never_gets_ready_fails_the_test(tmp_path):
    ended = subprocess.Popen([sys.executable, "-c", "pass"], stderr=subprocess.PIPE, text=True)
    ended.wait()
    with pytest.raises(AssertionError, match="ended before it was killed"):
        kill_when(ended, tmp_path / "none.sqlite", lambda s: True)
    proc = _sleeper()
    try:
        with pytest.raises(AssertionError, match="not ready within"):
            kill_when(proc, tmp_path / "none.sqlite", lambda s: True, timeout=1)
        assert process_state(proc.pid) != "T"  # left running, not stopped
    finally:
        proc.kill()
        proc.wait()
