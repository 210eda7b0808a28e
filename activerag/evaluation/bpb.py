"""Bits per byte of a set of passages under each setting of the LM benchmark, as REPLUG's
Table 1 reports it (Shi et al. 2023, §6.1): the bits of all the passages over all their UTF-8
bytes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from activerag.evaluation.stats import bootstrap_ci, bootstrap_ratio_ci, paired_permutation_p


def summarise_bpb(rows: Sequence[dict[str, Any]], baseline: str = "none") -> dict[str, Any]:
    """Each setting's bits per byte over ROWS (one per passage: its bytes, and its bits per
    byte under each setting).

    bpb is total bits over total bytes, with a 95% bootstrap interval over passages, and p a
    paired sign-flip test of the passages' bits against BASELINE (the same bytes, so equal
    totals of bits are equal bits per byte). mean_passage_bpb, the mean of the passages'
    own ratios, weighs a short passage as much as a long one; it is kept beside, labelled.
    """
    if not rows:
        raise ValueError("bits per byte of no passages")
    sizes = [r["bytes"] for r in rows]
    out = {}
    for name in rows[0]["bpb"]:
        ratios = [r["bpb"][name] for r in rows]
        bits = [b * n for b, n in zip(ratios, sizes, strict=True)]
        base = [r["bpb"][baseline] * n for r, n in zip(rows, sizes, strict=True)]
        out[name] = {"bpb": sum(bits) / sum(sizes), "ci": list(bootstrap_ratio_ci(bits, sizes)),
                     "p": paired_permutation_p(bits, base) if name != baseline else None,
                     "mean_passage_bpb": sum(ratios) / len(ratios),
                     "mean_passage_ci": list(bootstrap_ci(ratios))}
    return out
