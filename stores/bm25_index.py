"""BM25 for large stores: bm25s's sparse score matrix, built at ingest, memory-mapped on open.

The scores are rank-bm25's BM25Okapi scores (k1 = 1.5, b = 0.75, ε = 0.25), the reference the
store used to rebuild on every open:
- bm25s's Robertson variant leaves out the (k1 + 1) factor of the term-frequency part, a constant
  that `scores` puts back;
- a term in more than half of the passages has a negative Robertson idf, which bm25s clips to 0
  and rank-bm25 replaces by ε times the mean idf of the vocabulary; `build` writes that value
  into those terms' columns (bm25s keeps their entries, at 0), so they score as they did.

The index folder also holds where each passage's line starts in docs.jsonl and that file's size
when it was built: a store opens its passages by seeking to a line, not by reading them all, and
an index older than docs.jsonl (an ingest that did not finish) is known as such.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
K1, B, EPSILON = 1.5, 0.75, 0.25
"""Okapi's parameters, rank-bm25's defaults."""
TIE = 1e-12
"""Scores this close (relative) to the one ranked above them tie with it."""
FOLDER = "bm25s"
META = "activerag.json"


def okapi_idf(df: np.ndarray, n: int) -> np.ndarray:
    """Robertson's idf of document frequencies DF among N passages, as rank-bm25 computes it
    (negative for terms in more than half of them)."""
    return np.log(n - df + 0.5) - np.log(df + 0.5)


def mean_idf(tokens: Sequence[list[str]], df: dict[str, int], n: int) -> float:
    """The vocabulary's mean Robertson idf summed as rank-bm25 sums it: term by term in the order
    of first occurrence, with math.log. Where the mean is near 0, another order or log can flip
    its sign, and with it whether the floored terms (ε times it) score above 0 at all."""
    order = dict.fromkeys(chain.from_iterable(tokens))
    total = 0.0
    for term in order:
        total += math.log(n - df[term] + 0.5) - math.log(df[term] + 0.5)
    return total / len(order) if order else 0.0


def line_offsets(file: Path) -> np.ndarray:
    """Where each line of FILE starts, and the file's size last: len = lines + 1."""
    starts = [0]
    with open(file, "rb") as fh:
        for line in fh:
            starts.append(starts[-1] + len(line))
    return np.asarray(starts, dtype=np.int64)


class BM25Index:
    """A bm25s retriever over passages' BM25 tokens, with Okapi's scores (see the module)."""

    def __init__(self, retriever: object, count: int) -> None:
        self.retriever = retriever
        self.count = count
        self.vocab: dict[str, int] = retriever.vocab_dict  # type: ignore[attr-defined]

    @classmethod
    def build(cls, tokens: Sequence[list[str]]) -> BM25Index:
        """The index of the passages whose BM25 tokens are TOKENS, in order."""
        import bm25s

        retriever = bm25s.BM25(k1=K1, b=B, method="robertson", dtype="float64")
        retriever.index(list(tokens), show_progress=False)
        n = len(tokens)
        scores = retriever.scores
        indptr, indices = scores["indptr"], scores["indices"]
        # bm25s keeps an entry for every (passage, term) pair, zero-scored ones too, so a
        # column's length is the term's document frequency (its vocabulary's empty token,
        # for unknown query words, has no column)
        df = np.diff(np.asarray(indptr))
        idf = okapi_idf(df, n)
        floor = EPSILON * mean_idf(tokens, {t: int(df[c]) for t, c in retriever.vocab_dict.items()
                                           if c < len(df)}, n)
        lengths = np.fromiter((len(d) for d in tokens), dtype=np.float64, count=n)
        norm = K1 * (1 - B + B * lengths / max(lengths.mean(), 1e-9))
        term_of = {col: term for term, col in retriever.vocab_dict.items()}
        for col in np.flatnonzero(idf < 0):
            start, end = indptr[col], indptr[col + 1]
            docs = indices[start:end]
            tf = np.array([tokens[d].count(term_of[col]) for d in docs], dtype=np.float64)
            scores["data"][start:end] = floor * tf / (norm[docs] + tf)
        return cls(retriever, n)

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """Every passage's Okapi score for the query TERMS (a repeated term counts again)."""
        known = [t for t in terms if t in self.vocab]
        if not known:
            return np.zeros(self.count)
        return np.asarray(self.retriever.get_scores(known), dtype=np.float64) * (K1 + 1)  # type: ignore[attr-defined]

    def top(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The K best passages with a positive score, best first, ties in corpus order."""
        scores = self.scores(terms)
        matching = np.flatnonzero(scores > 0)
        if not len(matching):
            return []
        if len(matching) > k:
            kth = np.partition(scores[matching], len(matching) - k)[len(matching) - k]
            matching = matching[scores[matching] >= kth - TIE * kth]
        order = matching[np.lexsort((matching, -scores[matching]))]
        # scores summed in another order than rank-bm25's differ in the last bits: those
        # within TIE of the one above tie with it, and ties keep corpus order
        ranked = scores[order]
        group = np.concatenate(([0], np.cumsum(ranked[:-1] - ranked[1:] > TIE * ranked[:-1])))
        order = order[np.lexsort((order, group))][:k]
        return [(int(i), float(scores[i])) for i in order]

    def save(self, store: Path, docs_file: Path) -> None:
        """Write the index under STORE/bm25s (whole or not at all) with DOCS_FILE's offsets."""
        tmp = store / f"{FOLDER}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        self.retriever.save(str(tmp))  # type: ignore[attr-defined]
        offsets = line_offsets(docs_file)
        np.save(tmp / "offsets.npy", offsets)
        (tmp / META).write_text(json.dumps({"passages": self.count, "bytes": int(offsets[-1])}))
        final = store / FOLDER
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)

    @classmethod
    def open(cls, store: Path, docs_file: Path) -> tuple[BM25Index, np.ndarray] | None:
        """The saved index and passage offsets, memory-mapped; None if there is none or it is
        older than DOCS_FILE."""
        folder = store / FOLDER
        if not (folder / META).exists():
            return None
        meta = json.loads((folder / META).read_text())
        if meta["bytes"] != docs_file.stat().st_size:
            log.warning("the BM25 index in %s is older than %s (an ingest that did not finish?); "
                        "searching without it until `activerag ingest` runs again", folder,
                        docs_file)
            return None
        import bm25s

        retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        offsets = np.load(folder / "offsets.npy", mmap_mode="r")
        return cls(retriever, meta["passages"]), offsets
