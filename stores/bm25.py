"""BM25 over passages (rank-bm25), persisted as JSON lines and rebuilt on open."""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path

from langchain_core.documents import Document
from rank_bm25 import BM25Okapi

from activerag.errors import CorpusError

log = logging.getLogger(__name__)
_TOKEN = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her his in is it its of on or she that the "
    "their they this to was were which who with".split()
)


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25Store:
    """Okapi BM25 over a list of passages, stored at PATH/docs.jsonl."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.docs: list[Document] = []
        self._ids: set[str] = set()
        self._index: BM25Okapi | None = None
        # Graphs search through asyncio.to_thread: concurrent first searches build one index.
        self._lock = threading.Lock()
        if path is not None and (path / "docs.jsonl").exists():
            self._load(path / "docs.jsonl")

    def _load(self, file: Path) -> None:
        with open(file, "rb") as fh:
            data = fh.read()
        lines = data.split(b"\n")
        torn = lines.pop()  # what follows the last newline: b"" unless a write was cut short
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                doc = Document(page_content=row["text"], id=row["id"],
                               metadata={"id": row["id"], "title": row.get("title", ""),
                                         "source": row.get("source", "")})
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError) as exc:
                raise CorpusError(
                    f"{file}:{n} is damaged ({exc!r}); delete {file.parent} and ingest again"
                ) from exc
            self.docs.append(doc)
            self._ids.add(row["id"])
        if torn:
            # an ingest killed in the middle of a line: drop the part; ingesting again adds it
            log.warning("%s ends in a line cut short (%d bytes); dropped it, ingest the corpus "
                        "again to add its passage", file, len(torn))
            with open(file, "r+b") as fh:
                fh.truncate(len(data) - len(torn))

    def add(self, docs: list[Document]) -> int:
        """Append documents whose ids are new; persist them; return how many were added."""
        new = list({d.id: d for d in docs if d.id not in self._ids}.values())
        if not new:
            return 0
        with self._lock:
            self.docs.extend(new)
            self._ids.update(d.id for d in new if d.id)
            self._index = None
        if self.path is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(self.path / "docs.jsonl", "a", encoding="utf-8") as fh:
                for d in new:
                    row = {"id": d.id, "title": d.metadata.get("title", ""),
                           "source": d.metadata.get("source", ""), "text": d.page_content}
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return len(new)

    def _bm25(self) -> BM25Okapi:
        index = self._index
        if index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._build()
                index = self._index
        return index

    def _build(self) -> BM25Okapi:
        if not self.docs:
            raise CorpusError("the BM25 store is empty; ingest a corpus first "
                              "(activerag ingest PATH)")
        return BM25Okapi([bm25_tokens(f"{d.metadata.get('title', '')} {d.page_content}")
                          for d in self.docs])

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """Top K passages by BM25 score; ties keep corpus order."""
        index = self._bm25()
        terms = bm25_tokens(query)
        if not terms:
            return []
        scores = index.get_scores(terms)
        # Okapi idf is zero or below for terms in half the passages or more, so a passage that
        # matches only such terms can score 0: matching any term, not a positive score, counts.
        matching = [i for i, freqs in enumerate(index.doc_freqs) if any(t in freqs for t in terms)]
        order = sorted(matching, key=lambda i: (-scores[i], i))[:k]
        return [(self.docs[i], float(scores[i])) for i in order]

    def __len__(self) -> int:
        return len(self.docs)
