"""A corpus folder holds UTF-8 whatever the locale of the process that writes it: passages with
accents and other scripts ingested under an ASCII locale (LC_ALL=C, UTF-8 mode off) are read
back whole by a process under a UTF-8 one, through every file the store writes (issue #38).
The writer is this Python in a child process: a locale cannot change inside this one."""

import json
import os
import subprocess
import sys

from activerag.stores.bm25 import BM25Store
from activerag.stores.corpus import Corpus

TEXTS = {"Zürich": "Zürich liegt an der Limmat, sagt Jérôme.",
         "Kyiv": "Київ стоїть на Дніпрі.", "Tokyo": "東京は日本の首都です。"}

WRITE = """
import sys
from pathlib import Path
from activerag.stores.corpus import Corpus
Corpus(Path(sys.argv[1])).ingest(Path(sys.argv[2]), dense=False, progress=False)
"""


def test_a_store_written_under_an_ascii_locale_reads_back_whole(tmp_path):
    source = tmp_path / "c.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}, ensure_ascii=False) + "\n"
                              for t, x in TEXTS.items()), encoding="utf-8")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "utf-8",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-X", "utf8=0", "-c", WRITE, str(tmp_path / "store"),
                           str(source)], env=env, capture_output=True, text=True,
                          encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    store = BM25Store(tmp_path / "store" / "bm25")
    assert {d.metadata["title"]: d.page_content for d in store.docs} == TEXTS
    top, _ = store.search("Limmat Jérôme", 1)[0]
    assert top.metadata["title"] == "Zürich"
    assert len(Corpus(tmp_path / "store").bm25) == 3
