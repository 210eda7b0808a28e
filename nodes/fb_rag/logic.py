"""FB-RAG's pure parts (Chawla et al. 2025): chunking a long context, BM25 scores of every chunk,
the forward score as the max over the light LM's samples (Eq. 5) and the forward-backward mix
(Eq. 6), budgets in words, original order, Self-Route's "unanswerable", LongBench's middle
truncation, and how much of the gold paragraphs a reader read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from activerag.answers import normalize
from activerag.stores.bm25 import bm25_tokens

_WORD = re.compile(r"\S+")
_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    """A piece of the context: its position among the chunks, its text, and the words of the
    whole context it covers ([start, end))."""

    index: int
    text: str
    start: int
    end: int

    @property
    def words(self) -> int:
        return self.end - self.start


def chunk_words(context: str, size: int) -> list[Chunk]:
    """CONTEXT cut into consecutive chunks of SIZE words (the last may be shorter), each the
    original text from its first word to its last, line breaks kept."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1 word, got {size}")
    spans = [m.span() for m in _WORD.finditer(context)]
    out = []
    for i, first in enumerate(range(0, len(spans), size)):
        last = min(first + size, len(spans)) - 1
        out.append(Chunk(i, context[spans[first][0]:spans[last][1]], first, last + 1))
    return out


def chunk_paragraphs(context: str) -> list[Chunk]:
    """CONTEXT cut at blank lines: one chunk per paragraph (LongBench's passages)."""
    out: list[Chunk] = []
    words = 0
    for part in _PARAGRAPH.split(context):
        n = len(_WORD.findall(part))
        if n:
            out.append(Chunk(len(out), part.strip(), words, words + n))
            words += n
    return out


def bm25_scores(chunks: Sequence[Chunk], queries: Sequence[str]) -> list[list[float]]:
    """Okapi BM25 of every chunk for each query, over an index of the chunks alone (the
    scorer S of the paper), one row per query."""
    from rank_bm25 import BM25Okapi

    docs = [bm25_tokens(c.text) for c in chunks]
    if not any(docs):  # rank_bm25 divides by the average length
        return [[0.0] * len(chunks) for _ in queries]
    index = BM25Okapi([d or [""] for d in docs])
    return [[float(s) for s in index.get_scores(bm25_tokens(q))] for q in queries]


def forward_scores(per_sample: Sequence[Sequence[float]]) -> list[float]:
    """Eq. 5: a chunk's forward score is its best score under any one sample (the max, so one
    sample that found the evidence is enough), not an average over samples."""
    if not per_sample:
        raise ValueError("the forward score needs at least one sample")
    return [max(column) for column in zip(*per_sample, strict=True)]


def minmax(scores: Sequence[float]) -> list[float]:
    """SCORES mapped onto [0, 1] (all 0 when they are all equal)."""
    low, high = min(scores), max(scores)
    if high == low:
        return [0.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def combine(backward: Sequence[float], forward: Sequence[float], eta_b: float, eta_f: float,
            scale: Literal["raw", "minmax"] = "raw") -> list[float]:
    """Eq. 6: η_B·S(C_i; Q) + η_F·S_F(C_i). The paper does not put the two on one scale: raw
    adds them as they are; minmax first maps each onto [0, 1]."""
    if scale == "minmax":
        backward, forward = minmax(backward), minmax(forward)
    return [eta_b * b + eta_f * f for b, f in zip(backward, forward, strict=True)]


def ranking(scores: Sequence[float]) -> list[int]:
    """Chunk positions from the best score down; a tie goes to the earlier chunk."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def within_budget(order: Sequence[int], chunks: Sequence[Chunk], budget: int) -> list[int]:
    """The chunks of ORDER taken from its head while their words fit BUDGET (the first one
    always, so that a reader never gets nothing)."""
    taken: list[int] = []
    words = 0
    for i in order:
        if taken and words + chunks[i].words > budget:
            break
        taken.append(i)
        words += chunks[i].words
    return taken


def join_chunks(chunks: Sequence[Chunk], picked: Sequence[int],
                order: Literal["original", "score"] = "original") -> str:
    """The picked chunks' text for the reader: in the context's order (OP-RAG, FB-RAG's
    stage III) or in the order given (vanilla RAG)."""
    chosen = sorted(picked) if order == "original" else list(picked)
    return "\n\n".join(chunks[i].text for i in chosen)


def unanswerable(answer: str) -> bool:
    """Self-Route: the reader declined (a normalised substring, not an exact string)."""
    return "unanswerable" in normalize(answer)


def truncate_middle(ids: Sequence[int], limit: int) -> tuple[list[int], int]:
    """LongBench's truncation: a prompt longer than LIMIT tokens keeps its first and last
    LIMIT/2; returns the kept ids and how many were dropped."""
    if limit < 2:
        raise ValueError(f"the limit must be at least 2 tokens, got {limit}")
    if len(ids) <= limit:
        return list(ids), 0
    half = limit // 2
    return [*ids[:half], *ids[len(ids) - (limit - half):]], len(ids) - limit


def _words_read(spans: Sequence[tuple[int, int]], gold: tuple[int, int]) -> int:
    """How many words of the GOLD span some span read covers ([start, end) words; a word read
    twice counts once)."""
    g0, g1 = gold
    read, reached = 0, g0
    for s, e in sorted(spans):
        s, e = max(s, reached), min(e, g1)
        if s < e:
            read += e - s
            reached = e
    return read


def gold_word_recall(spans: Sequence[tuple[int, int]],
                     gold: Sequence[tuple[int, int]]) -> float | None:
    """Share of the words of the GOLD paragraphs ([start, end) word spans) that the SPANS read
    cover (None: no gold known)."""
    if not gold:
        return None
    return sum(_words_read(spans, g) for g in gold) / sum(g1 - g0 for g0, g1 in gold)


def gold_half_recall(spans: Sequence[tuple[int, int]],
                     gold: Sequence[tuple[int, int]]) -> float | None:
    """Share of the GOLD paragraphs of which the SPANS read at least half the words (None: no
    gold known); one word of a paragraph does not make it read."""
    if not gold:
        return None
    return sum(1 for g0, g1 in gold if 2 * _words_read(spans, (g0, g1)) >= g1 - g0) / len(gold)
