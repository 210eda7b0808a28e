"""The LM cache shared by several writers at once (issue #19): none of them dies of a lock that
another holds for a while, and a lock held past the wait is a clear error."""

import asyncio
import sqlite3
import threading
import time

import pytest

from activerag.errors import ActiveRagError
from activerag.serving.cache import CachedLM, _Table
from activerag.serving.generation import Generation


class CountingLM:
    """An LM that answers every prompt with itself."""

    model = "m"

    async def generate(self, prompt, **kw):
        return Generation(text=prompt, tokens=[], finished=True, prompt=prompt)


def _hold(path, seconds, held):
    """Hold PATH's write lock for SECONDS, as a writer in the middle of a slow commit does."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    held.set()
    time.sleep(seconds)
    db.execute("COMMIT")
    db.close()


def test_writers_that_find_the_cache_locked_for_a_while_wait_and_all_succeed(tmp_path):
    path = tmp_path / "lm.sqlite"
    CachedLM(CountingLM(), path)
    held = threading.Event()
    holder = threading.Thread(target=_hold, args=(path, 6.0, held))
    holder.start()
    held.wait()
    errors: list[BaseException] = []

    def write(w):
        lm = CachedLM(CountingLM(), path)  # each writer its own connection, as processes have
        try:
            for i in range(20):
                asyncio.run(lm.generate(f"{w}/{i}", max_tokens=4))
        except BaseException as e:  # noqa: BLE001 - reported below, whatever it is
            errors.append(e)

    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in writers:
        t.start()
    for t in [holder, *writers]:
        t.join()
    assert errors == []
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM gen").fetchone() == (80,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_lock_held_past_the_wait_is_a_clear_error(tmp_path):
    path = tmp_path / "lm.sqlite"
    table = _Table(path, "gen", timeout=0.2)
    held = threading.Event()
    holder = threading.Thread(target=_hold, args=(path, 1.0, held))
    holder.start()
    held.wait()
    try:
        with pytest.raises(ActiveRagError, match=r"lm\.sqlite.*locked.*another process"):
            table.put("k", 1)
    finally:
        holder.join()
    table.put("k", 1)
    assert table.get("k") == 1
