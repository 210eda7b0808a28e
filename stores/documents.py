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
"""The extensions read, in any case (.JSONL too)."""
FORMATS = ("a corpus is .jsonl (one JSON object a line with a 'text' field, or one of "
           + ", ".join(repr(k) for k in TEXT_KEYS[1:]) + ", and an optional 'title'), .json "
           "(a list of such objects), .tsv (DPR's columns id, text, title, or a header row "
           "naming 'text' and 'title'), or .txt/.md (passages between blank lines, titled by "
           "the file's name or a .md heading)")
"""What each accepted file must hold, for the errors that refuse one."""
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


def check_max_words(max_words: int) -> None:
    """Refuse a passage length below one word (0 cannot step through words; below 0 keeps no
    passage)."""
    if max_words < 1:
        raise CorpusError(f"max_words must be at least 1, got {max_words}; give the passage "
                          "length in words (--max-words)")


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


_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _not_utf8(text: str, path: Path, what: str) -> tuple[int, str] | None:
    """The line within TEXT of its first byte that is not UTF-8 and why WHAT was skipped.

    TEXT was read with errors="surrogateescape", which turns each bad byte into one of
    U+DC80..U+DCFF, so a bad byte costs its own row only. None when TEXT is valid.
    """
    bad = _NOT_UTF8.search(text)
    if bad is None:
        return None
    at = bad.start()
    column = at - text.rfind("\n", 0, at)
    return text.count("\n", 0, at), (
        f"the {what} is not valid UTF-8 (byte 0x{ord(bad.group()) - 0xDC00:02x} at column "
        f"{column}) and was skipped; re-encode the file and ingest it again, e.g. "
        f"iconv -f WINDOWS-1252 -t UTF-8 {path.name} > utf8-{path.name}")


_SURROGATE = re.compile("[\ud800-\udfff]")
TOO_DEEP = "nested deeper than the JSON reader follows"


def _record(row: object, where: str, report: ReadReport) -> Iterator[tuple[str, str]]:
    if not isinstance(row, dict):
        report.skip(where, "not a JSON object")
        return
    text = next((row[k] for k in TEXT_KEYS if isinstance(row.get(k), str)), None)
    if not text or not text.strip():
        report.skip(where, f"no text field (one of {', '.join(TEXT_KEYS)})")
        return
    title = next((row[k] for k in TITLE_KEYS if isinstance(row.get(k), str)), "")
    for what, value in (("title", title), ("text", text)):
        bad = _SURROGATE.search(value)
        if bad is not None:
            report.skip(where, f"its {what} holds a lone surrogate (\\u{ord(bad.group()):04x} "
                               f"at character {bad.start() + 1}), which UTF-8 cannot hold; "
                               "fix that escape in the file")
            return
    yield title, text


def _records_jsonl(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            bad = _not_utf8(line, path, "row")
            if bad is not None:
                report.skip(f"{path.name}:{n}", bad[1])
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                report.skip(f"{path.name}:{n}", f"not JSON ({exc.msg})")
                continue
            except RecursionError:
                report.skip(f"{path.name}:{n}", TOO_DEEP)
                continue
            yield from _record(row, f"{path.name}:{n}", report)


def _records_json(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    raw = path.read_bytes()
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CorpusError(
            f"{path} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} on line {line}); a .json "
            f"corpus is read whole, so re-encode it first, e.g. iconv -f WINDOWS-1252 -t UTF-8 "
            f"{path.name} > utf8-{path.name}, or convert it to jsonl (bad rows are then skipped)"
        ) from exc
    try:
        rows = json.loads(body)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path} is not valid JSON ({exc}); a .json corpus is a list of "
                          "objects with 'title' and 'text'") from exc
    except RecursionError as exc:
        raise CorpusError(f"{path} is {TOO_DEEP}; a .json corpus is a list of objects with "
                          "'title' and 'text'") from exc
    if not isinstance(rows, list):
        raise CorpusError(f"{path} holds a JSON {type(rows).__name__}; expected a list of "
                          "objects with 'title' and 'text'")
    for n, row in enumerate(rows):
        yield from _record(row, f"{path.name}[{n}]", report)


def _records_tsv(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
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
            yield from _tsv_row(header, ti, hi, f"{path.name}:1", path, report)
        for row in reader:
            yield from _tsv_row(row, ti, hi, f"{path.name}:{reader.line_num}", path, report)


def _tsv_row(row: list[str], ti: int, hi: int | None, where: str, path: Path,
             report: ReadReport) -> Iterator[tuple[str, str]]:
    bad = _not_utf8("\t".join(row), path, "row")
    if bad is not None:
        report.skip(where, bad[1])
        return
    if len(row) <= max(ti, hi or 0):
        report.skip(where, f"{len(row)} columns, expected id, text, title")
        return
    text = row[ti].strip()
    if not text:
        report.skip(where, "empty text")
        return
    yield (row[hi].strip() if hi is not None else ""), text


def _blocks(body: str) -> Iterator[tuple[int, str]]:
    """The blocks of BODY between blank lines, stripped, each with the line it starts on."""
    start = 0
    block: list[str] = []
    for n, line in enumerate(body.split("\n"), 1):
        if line.strip():
            start = start if block else n
            block.append(line)
        elif block:
            yield start, "\n".join(block).strip()
            block = []
    if block:
        yield start, "\n".join(block).strip()


def _records_text(path: Path, report: ReadReport) -> Iterator[tuple[str, str]]:
    body = path.read_text(encoding="utf-8", errors="surrogateescape")
    title = path.stem
    for start, block in _blocks(body):
        bad = _not_utf8(block, path, "block")
        if bad is not None:
            report.skip(f"{path.name}:{start + bad[0]}", bad[1])
            continue
        if path.suffix.lower() == ".md" and block.startswith("#"):
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
        if path.suffix.lower() not in SUFFIXES:
            raise CorpusError(f"{path} is not one of {sorted(SUFFIXES)}; convert it: {FORMATS}")
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        raise CorpusError(f"{path} holds no {sorted(SUFFIXES)} files; {FORMATS}")
    return files


def read_corpus(path: Path, max_words: int = 120,
                report: ReadReport | None = None) -> Iterator[Document]:
    """Yield the passages of every file at PATH; bad rows (malformed, not UTF-8) go to REPORT.

    A file that cannot be read at all (a .json that is not JSON or not UTF-8) stops the read
    when it is the only one, and is skipped and reported when it is one file of a folder.
    """
    check_max_words(max_words)
    report = report if report is not None else ReadReport()
    readers = {".jsonl": _records_jsonl, ".json": _records_json, ".tsv": _records_tsv,
               ".txt": _records_text, ".md": _records_text}
    files = corpus_files(path)
    for file in files:
        records = readers[file.suffix.lower()](file, report)
        while True:
            try:
                title, text = next(records)
            except StopIteration:
                break
            except CorpusError as exc:
                if len(files) == 1:
                    raise
                report.skip(file.name, f"the whole file was skipped: {exc}")
                break
            report.rows += 1
            for passage in split_passages(text, max_words):
                yield make_document(passage, title, file.name)
