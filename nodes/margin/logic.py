"""The margin gate's arithmetic, pure: each position's gap between its two best alternatives,
and the mean gap over a prefix of the answer."""

from __future__ import annotations

import math
from collections.abc import Sequence

FLOOR = 1e-12
"""The smallest probability a missing second alternative is given (its log bounds the gap)."""


def margin(top: Sequence[float]) -> float | None:
    """The gap in nats between a position's best and second-best log-probabilities. With one
    alternative listed, the second is given the most it can have, min(p, 1 - p), so that the
    gap is never overstated; None: no alternatives."""
    if not top:
        return None
    first, *rest = sorted(top, reverse=True)
    second = rest[0] if rest else min(first, math.log(max(1.0 - math.exp(first), FLOOR)))
    return first - second


def mean_margin(tops: Sequence[Sequence[float]], prefix: int) -> float | None:
    """The mean margin over the first PREFIX positions (0: every position), positions without
    alternatives left out; None when none is left."""
    read = tops[:prefix] if prefix > 0 else tops
    gaps = [g for g in map(margin, read) if g is not None]
    return sum(gaps) / len(gaps) if gaps else None
