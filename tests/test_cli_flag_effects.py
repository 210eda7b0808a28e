"""Run flags that are not context fields reach their effect (issue #38): `--checkpoints PATH`
writes the thread there (and only there), `--thread` names it."""

from __future__ import annotations

import json
import sqlite3

import pytest

from activerag import cli
from activerag.stores.corpus import Corpus
from activerag.testing.fake_lm import Backend, backend

pytestmark = pytest.mark.usefixtures("own_home")
QUESTION = "Where was Alpha Beta born?"


@pytest.fixture
def store(tmp_path):  # type: ignore[no-untyped-def]
    source = tmp_path / "p.jsonl"
    source.write_text(json.dumps({"title": "Alpha Beta", "text": "Alpha Beta was born in Gepu."})
                      + "\n")
    Corpus(tmp_path / "store").ingest(source, dense=False, progress=False)
    return str(tmp_path / "store")


def threads(path) -> set[str]:  # type: ignore[no-untyped-def]
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT DISTINCT thread_id FROM checkpoints")}


def test_checkpoints_path_holds_the_named_thread_and_the_default_file_does_not(store, tmp_path):
    path = tmp_path / "elsewhere" / "mine.sqlite"
    path.parent.mkdir()
    with backend(Backend()) as url:
        assert cli.main(["ask", "--method", "single", "--base-url", url, "--store", store,
                         "--thread", "t-41", "--checkpoints", str(path), QUESTION]) == 0
    assert threads(path) == {"t-41"}
    from activerag.settings import Settings

    default = Settings.from_env().home / "threads.sqlite"
    assert not default.exists() or "t-41" not in threads(default)
