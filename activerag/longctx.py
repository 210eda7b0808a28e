"""LongBench-style long-context QA inputs (what FB-RAG is evaluated on), built from the shared
data: each question's own paragraphs (the gold among them), padded with distractor paragraphs of
the union corpus whose titles are not already there, up to a number of words, shuffled with a
seed and laid out as LongBench lays out 2WikiMQA and HotpotQA ("Passage i:" then the title and
the text). The gold paragraphs' word spans are kept, so a run can measure how much of the
evidence its chosen chunks cover.

Rows are LongBench's fields (`_id`, `input`, `context`, `answers`, `length`) plus
`gold_titles`, `gold_spans` and `dataset`; any LongBench jsonl is read the same way.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import (
    HOTPOT_SPLIT,
    TWOWIKI_500,
    read_jsonl,
    shared_data,
    shared_json,
)

UNION_CORPUS = "corpus/union_wiki_paragraphs_dpr_format.tsv"
SOURCES = ("2wiki500", "hotpotqa")

Paragraph = tuple[str, str]
"""(title, text)"""


def _words(text: str) -> int:
    return len(text.split())


def passage_text(index: int, title: str, text: str) -> str:
    """One passage as LongBench's 2WikiMQA and HotpotQA contexts show it."""
    return f"Passage {index}:\n{title}\n{text}"


def layout(paragraphs: Sequence[Paragraph], gold_titles: Sequence[str],
           ) -> tuple[str, list[tuple[int, int]]]:
    """The context of PARAGRAPHS in their order and the word span of each gold one."""
    parts, spans, words = [], [], 0
    gold = set(gold_titles)
    for i, (title, text) in enumerate(paragraphs, 1):
        part = passage_text(i, title, text)
        n = _words(part)
        if title in gold:
            spans.append((words, words + n))
        parts.append(part)
        words += n
    return "\n\n".join(parts), spans


def pad(own: Sequence[Paragraph], pool: Sequence[Paragraph], words: int,
        rng: random.Random) -> list[Paragraph]:
    """OWN plus distractors drawn from POOL (never a title OWN or an earlier draw has) while
    the total stays within WORDS, then shuffled."""
    out = list(own)
    titles = {t for t, _ in own}
    total = sum(_words(passage_text(1, t, x)) for t, x in own)
    order = list(range(len(pool)))
    rng.shuffle(order)
    for i in order:
        title, text = pool[i]
        n = _words(passage_text(1, title, text))
        if title in titles:
            continue
        if total + n > words:
            break
        out.append((title, text))
        titles.add(title)
        total += n
    rng.shuffle(out)
    return out


def _own_paragraphs(source: str) -> list[dict[str, Any]]:
    """The questions of SOURCE with their own paragraphs and gold titles."""
    if source == "2wiki500":
        cols = shared_json(TWOWIKI_500)
        return [{"_id": str(cols["_1"][k]), "input": cols["question"][k],
                 "answers": [cols["answer"][k]],
                 "paragraphs": [(t, " ".join(s)) for t, s in cols["context"][k]],
                 "gold_titles": sorted({t for t, _ in cols["supporting_facts"][k]})}
                for k in cols["question"]]
    if source == "hotpotqa":
        rows = read_jsonl(shared_data() / HOTPOT_SPLIT.format(split="test"))
        return [{"_id": str(r["id"]), "input": r["question"], "answers": [r["answer"]],
                 "paragraphs": [(t, "".join(s)) for t, s in
                                zip(r["context"]["title"], r["context"]["sentences"],
                                    strict=True)],
                 "gold_titles": sorted(set(r["supporting_facts"]["title"]))} for r in rows]
    raise ActiveRagError(f"unknown source {source!r}; choose {' or '.join(SOURCES)}")


def union_corpus() -> list[Paragraph]:
    """The shared corpus's paragraphs (title, text)."""
    path = shared_data() / UNION_CORPUS
    if not path.exists():
        raise ActiveRagError(f"{path} is missing; set ACTIVERAG_DATA to the shared data")
    with path.open(newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        ti, xi = header.index("title"), header.index("text")
        return [(row[ti], row[xi]) for row in reader if len(row) > max(ti, xi)]


def build(source: str, words: int, n: int | None = None, seed: int = 0,
          pool: Sequence[Paragraph] | None = None) -> list[dict[str, Any]]:
    """LongBench-style rows of SOURCE's first N questions, padded to WORDS words."""
    if words < 1:
        raise ActiveRagError(f"the target length must be a positive number of words, got {words}")
    rows = _own_paragraphs(source)[:n]
    pool = union_corpus() if pool is None else pool
    out = []
    for r in rows:
        paragraphs = pad(r["paragraphs"], pool, words, random.Random(f"{seed}/{r['_id']}"))
        context, spans = layout(paragraphs, r["gold_titles"])
        out.append({"_id": r["_id"], "input": r["input"], "context": context,
                    "answers": r["answers"], "length": _words(context),
                    "gold_titles": r["gold_titles"], "gold_spans": spans,
                    "dataset": f"{source}-{words}w"})
    return out


def write(rows: Sequence[dict[str, Any]], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with partial.open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    partial.replace(out)
    lengths = sorted(r["length"] for r in rows)
    print(f"wrote {len(rows)} rows to {out} (words: median {lengths[len(lengths) // 2]}, "
          f"max {lengths[-1]})", file=sys.stderr)
