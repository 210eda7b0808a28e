"""One writer at a time for a BM25 store and an evaluation run folder (issue #19): readers never
write (a torn last line is left to the writer still writing it), a second writer is refused
with the pid and command of the one that holds the folder."""

import json
import os
import subprocess
import sys

import pytest

from activerag.errors import ActiveRagError
from activerag.evaluation.evaluate import Run, evaluate
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document

DOCS = [make_document(f"Place {i} lies on river {i}.", f"Place {i}") for i in range(4)]


def row(doc):
    return json.dumps({"id": doc.id, "title": doc.metadata["title"], "source": "",
                       "text": doc.page_content}) + "\n"


def test_a_reader_leaves_the_line_an_ingest_is_writing_alone(tmp_path):
    file = tmp_path / "docs.jsonl"
    whole = "".join(row(d) for d in DOCS).encode()
    cut = len(whole) - 20
    file.write_bytes(whole[:cut])  # the ingest's buffer flushed in the middle of the last row
    opened = BM25Store(tmp_path)
    assert [d.metadata["title"] for d in opened.docs] == ["Place 0", "Place 1", "Place 2"]
    assert file.read_bytes() == whole[:cut]
    with open(file, "ab") as fh:  # the ingest writes the rest of the row
        fh.write(whole[cut:])
    assert len(BM25Store(tmp_path)) == 4


def test_the_writer_drops_a_line_cut_short_by_a_killed_ingest_before_it_appends(tmp_path):
    file = tmp_path / "docs.jsonl"
    file.write_text(row(DOCS[0]) + row(DOCS[1])[:-20])
    store = BM25Store(tmp_path)
    assert store.add(DOCS[1:3]) == 2
    store.close()
    assert file.read_text() == row(DOCS[0]) + row(DOCS[1]) + row(DOCS[2])


def test_a_second_writer_of_a_bm25_store_is_refused_with_who_holds_it(tmp_path):
    first = BM25Store(tmp_path)
    first.add(DOCS[:2])
    second = BM25Store(tmp_path)
    assert len(second) == 2  # reading is never refused
    with pytest.raises(ActiveRagError, match=rf"{tmp_path}.*pid {os.getpid()}: .*pytest"):
        second.add(DOCS[2:])
    first.close()
    assert second.add(DOCS[2:]) == 2
    second.close()
    assert len(BM25Store(tmp_path)) == 4


def test_a_writer_that_opened_the_store_before_another_wrote_to_it_adds_only_new_rows(tmp_path):
    early = BM25Store(tmp_path)
    assert len(early) == 0
    other = BM25Store(tmp_path)
    other.add(DOCS[:2])
    other.close()
    assert early.add(DOCS[:3]) == 1
    early.close()
    assert len(BM25Store(tmp_path)) == 3


CONFIG = {"dataset": "t", "ids": ["q0"], "methods": ["single"], "contexts": {}}

HOLD = """
import sys
from pathlib import Path
from activerag.evaluation.evaluate import Run
run = Run(Path(sys.argv[1]))
run.start({config})
print("held", flush=True)
sys.stdin.read()
"""


async def test_a_second_evaluation_in_a_run_folder_is_refused_with_who_holds_it(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD.format(config=CONFIG),
                               str(tmp_path), "--as-eval"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(ActiveRagError, match=rf"pid {holder.pid}: .*--as-eval"):
            await evaluate(Run(tmp_path), "t", {}, [], progress=False)
        with pytest.raises(ActiveRagError, match=rf"pid {holder.pid}"):
            Run(tmp_path).start(CONFIG)
    finally:
        holder.communicate("")
    assert not (tmp_path / "examples.jsonl").exists()
    Run(tmp_path).start(CONFIG)  # free once the holder has gone
