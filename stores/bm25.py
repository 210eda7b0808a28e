"""BM25 over passages, persisted as JSON lines: rank-bm25 in memory, or the bm25s index that
ingest builds (stores/bm25_index.py), opened memory-mapped."""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from rank_bm25 import BM25Okapi

from activerag.errors import CorpusError
from activerag.locks import WriterLock
from activerag.stores.bm25_index import BM25Index

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
    """Okapi BM25 over a list of passages, stored at PATH/docs.jsonl.

    A stored store is searched through the bm25s index that `build_index` writes (ingest does
    so): opened memory-mapped, its passages read from docs.jsonl by offset when found. Without
    a current index (in memory, or passages added since) it builds rank-bm25's in memory, the
    reference whose scores and rankings the index reproduces.

    Opening and searching never write. The first `add` or `build_index` takes the folder's
    writer lock (refused while another process or store writes there) and keeps it until
    `close`, or until the store is dropped."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._docs: list[Document] | None = None
        self._ids: set[str] | None = None
        self._index: BM25Okapi | None = None
        self._fast: BM25Index | None = None
        self._offsets: Any = None
        self._read_bytes = 0
        """How much of docs.jsonl the passages in memory were read from (its whole lines)."""
        self._writer = WriterLock(path, "the BM25 store") if path is not None else None
        # Graphs search through asyncio.to_thread: concurrent first searches build one index.
        self._lock = threading.Lock()
        if path is None or not self._file.exists():
            self._docs, self._ids = [], set()
            return
        opened = BM25Index.open(path, self._file)
        if opened is None:
            self._load(self._file)
        else:
            self._fast, self._offsets = opened

    @property
    def _file(self) -> Path:
        assert self.path is not None
        return self.path / "docs.jsonl"

    @property
    def docs(self) -> list[Document]:
        """Every passage, in corpus order (read from disk the first time it is asked for)."""
        if self._docs is None:
            with self._lock:
                if self._docs is None:
                    self._load(self._file)
        assert self._docs is not None
        return self._docs

    def _load(self, file: Path) -> None:
        with open(file, "rb") as fh:
            data = fh.read()
        lines = data.split(b"\n")
        torn = lines.pop()  # what follows the last newline: b"" unless a write was cut short
        docs: list[Document] = []
        ids: set[str] = set()
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                doc = _row_document(row)
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError) as exc:
                raise CorpusError(
                    f"{file}:{n} is damaged ({exc!r}); delete {file.parent} and ingest again"
                ) from exc
            docs.append(doc)
            ids.add(row["id"])
        self._docs, self._ids = docs, ids
        self._read_bytes = len(data) - len(torn)
        if torn:  # an ingest writing that line now, or one killed mid-line: not a passage yet
            log.info("%s ends in a line not yet whole (%d bytes); read without it", file,
                     len(torn))

    def _write_lock(self) -> None:
        """Become the store's one writer; as that, drop a line a killed writer left unfinished
        and catch up with what other writers added since the passages were read."""
        if self._writer is None or not self._writer.acquire() or not self._file.exists():
            return
        with open(self._file, "rb+") as fh:
            size = fh.seek(0, 2)
            end = _whole_lines_end(fh, size)
            if end < size:
                log.warning("%s ends in a line cut short by a killed ingest (%d bytes); "
                            "dropped it, its passage is added again", self._file, size - end)
                fh.truncate(end)
                size = end
        if self._docs is not None and size != self._read_bytes:
            self._load(self._file)
            with self._lock:
                self._index = self._fast = None

    def close(self) -> None:
        """Give up the writer lock (a store that only read holds none)."""
        if self._writer is not None:
            self._writer.release()

    def add(self, docs: list[Document]) -> int:
        """Append documents whose ids are new; persist them; return how many were added. The
        bm25s index is then out of date until `build_index`."""
        self._write_lock()
        have = self.docs  # loads the stored passages if the index alone was open
        assert self._ids is not None
        new = list({d.id: d for d in docs if d.id not in self._ids}.values())
        if not new:
            return 0
        with self._lock:
            have.extend(new)
            self._ids.update(d.id for d in new if d.id)
            self._index = None
            self._fast = None
        if self.path is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(self._file, "a", encoding="utf-8") as fh:
                for d in new:
                    row = {"id": d.id, "title": d.metadata.get("title", ""),
                           "source": d.metadata.get("source", ""), "text": d.page_content}
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return len(new)

    @property
    def indexed(self) -> bool:
        """Whether searches go through a current bm25s index."""
        return self._fast is not None

    def build_index(self) -> None:
        """Build and save the bm25s index of every stored passage (ingest calls this)."""
        if self.path is None:
            return
        self._write_lock()
        if not self.docs:
            return
        index = BM25Index.build([_doc_tokens(d) for d in self.docs])
        index.save(self.path, self._file)
        opened = BM25Index.open(self.path, self._file)
        with self._lock:
            self._fast, self._offsets = opened if opened else (None, None)

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
        return BM25Okapi([_doc_tokens(d) for d in self.docs])

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """Top K passages by BM25 score; ties keep corpus order."""
        fast = self._fast
        if fast is not None:
            terms = bm25_tokens(query)
            return [(self._doc(i), score) for i, score in fast.top(terms, k)] if terms else []
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

    def _doc(self, i: int) -> Document:
        """Passage I: from memory if loaded, else its line of docs.jsonl."""
        if self._docs is not None:
            return self._docs[i]
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        with open(self._file, "rb") as fh:
            fh.seek(start)
            return _row_document(json.loads(fh.read(end - start)))

    def __len__(self) -> int:
        if self._docs is None and self._fast is not None:
            return self._fast.count
        return len(self.docs)


def _whole_lines_end(fh: Any, size: int) -> int:
    """Where the last whole line of the open binary file FH (of SIZE bytes) ends."""
    pos = size
    while pos > 0:
        start = max(0, pos - (1 << 16))
        fh.seek(start)
        newline = fh.read(pos - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        pos = start
    return 0


def _row_document(row: dict[str, Any]) -> Document:
    return Document(page_content=row["text"], id=row["id"],
                    metadata={"id": row["id"], "title": row.get("title", ""),
                              "source": row.get("source", "")})


def _doc_tokens(doc: Document) -> list[str]:
    return bm25_tokens(f"{doc.metadata.get('title', '')} {doc.page_content}")
