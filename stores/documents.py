"""Read corpora (jsonl, DPR tsv, txt, md) into passages with content-hash ids."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import Document

from activerag.errors import CorpusError

TEXT_KEYS = ("text", "contents", "content", "paragraph_text", "page_content", "body")
TITLE_KEYS = ("title", "name", "heading")
SUFFIXES = {".jsonl", ".json", ".tsv", ".txt", ".md"}
_WORD = re.compile(r"\S+")
_SENT_END = re.compile(r"(?<=[.!?])\s+")
csv.field_size_limit(sys.maxsize)


def passage_id(title: str, text: str) -> str:
    """Content hash of a passage: the same title and text always get the same id."""
    return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:20]


def make_document(text: str, title: str = "", source: str = "") -> Document:
    """A LangChain Document whose id is its content hash."""
    pid = passage_id(title, text)
    return Document(page_content=text, id=pid, metadata={"id": pid, "title": title,
                                                         "source": source})


def split_passages(text: str, max_words: int = 120) -> list[str]:
    """Split TEXT into passages of at most about MAX_WORDS words, cutting between sentences."""
    text = " ".join(text.split())
    if len(_WORD.findall(text)) <= max_words:
        return [text] if text else []
    passages: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in _SENT_END.split(text):
        n = len(sentence.split())
        if current and count + n > max_words:
            passages.append(" ".join(current))
            current, count = [], 0
        if n > max_words:
            words = sentence.split()
            for i in range(0, len(words), max_words):
                passages.append(" ".join(words[i:i + max_words]))
            continue
        current.append(sentence)
        count += n
    if current:
        passages.append(" ".join(current))
    return passages


@dataclass
class ReadReport:
    """What reading a corpus found: rows read, rows skipped and why."""

    rows: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)

    def skip(self, where: str, why: str) -> None:
        self.skipped += 1
        if len(self.problems) < 20:
            self.problems.append(f"{where}: {why}")


def _record(row: object, where: str, report: ReadReport) -> Iterator[tuple[str, str]]:
    if not isinstance(row, dict):
        report.skip(where, "not a JSON object")
        return
    text = next((row[k] for k in TEXT_KEYS if isinstance(row.get(k), str)), None)
    if not text or not text.strip():
        report.skip(where, f"no text field (one of {', '.join(TEXT_KEYS)})")
        return
    yield next((row[k] for k in TITLE_KEYS if isinstance(row.get(k), str)), ""), text


def _records_jsonl(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                report.skip(f"{path.name}:{n}", f"not JSON ({exc.msg})")
                continue
            yield from _record(row, f"{path.name}:{n}", report)


def _records_json(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path} is not valid JSON ({exc}); a .json corpus is a list of "
                          "objects with 'title' and 'text'") from exc
    if not isinstance(rows, list):
        raise CorpusError(f"{path} holds a JSON {type(rows).__name__}; expected a list of "
                          "objects with 'title' and 'text'")
    for n, row in enumerate(rows):
        yield from _record(row, f"{path.name}[{n}]", report)


def _records_tsv(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None:
            return
        cols = [h.strip().lower() for h in header]
        if "text" in cols:
            ti, hi = cols.index("text"), cols.index("title") if "title" in cols else None
        else:
            # DPR format without a header row: id, text, title
            ti, hi = 1, 2
            yield from _tsv_row(header, ti, hi, f"{path.name}:1", report)
        for n, row in enumerate(reader, 2):
            yield from _tsv_row(row, ti, hi, f"{path.name}:{n}", report)


def _tsv_row(row: list[str], ti: int, hi: int | None, where: str,
             report: ReadReport) -> Iterator[tuple[str, str]]:
    if len(row) <= max(ti, hi or 0):
        report.skip(where, f"{len(row)} columns, expected id, text, title")
        return
    text = row[ti].strip()
    if not text:
        report.skip(where, "empty text")
        return
    yield (row[hi].strip() if hi is not None else ""), text


def _records_text(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    body = path.read_text(encoding="utf-8", errors="replace")
    title = path.stem
    for block in re.split(r"\n\s*\n", body):
        block = block.strip()
        if path.suffix == ".md" and block.startswith("#"):
            heading, _, rest = block.partition("\n")
            title = heading.lstrip("#").strip() or title
            block = rest.strip()
        if block:
            yield title, block


def corpus_files(path: Path) -> list[Path]:
    """The readable files at PATH (a file, or a folder searched recursively)."""
    if not path.exists():
        raise CorpusError(f"corpus path {path} does not exist; pass a file or a folder")
    if path.is_file():
        if path.suffix not in SUFFIXES:
            raise CorpusError(f"{path} is not one of {sorted(SUFFIXES)}; convert it to jsonl")
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    if not files:
        raise CorpusError(f"{path} holds no {sorted(SUFFIXES)} files")
    return files


def read_corpus(path: Path, max_words: int = 120,
                report: ReadReport | None = None) -> Iterator[Document]:
    """Yield the passages of every file at PATH; malformed rows are counted in REPORT."""
    report = report if report is not None else ReadReport()
    readers = {".jsonl": _records_jsonl, ".json": _records_json, ".tsv": _records_tsv,
               ".txt": _records_text, ".md": _records_text}
    for file in corpus_files(path):
        for title, text in readers[file.suffix](file, report):
            report.rows += 1
            for passage in split_passages(text, max_words):
                yield make_document(passage, title, file.name)
