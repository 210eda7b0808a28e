"""SeaKR-lite's pure scoring: how uncertain a pseudo-generation is, and which documents stay.

After Yao et al. (2025), "SeaKR", self-aware re-ranking: every retrieved snippet is read by
the LM on its own, and the snippets under which the LM is least uncertain are kept. The paper
measures that uncertainty from hidden states (a Gram determinant over sampled generations);
here it is the mean token entropy of one greedy pseudo-generation, each position's entropy
over its top-20 alternatives with the mass they leave out as one more outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from activerag.nodes.triggers import entropy

POOL_FACTOR = 3
"""Candidates per kept document when the pool is not set: the authors' code retrieves 3
snippets per retrieval and keeps the 1 that leaves the LM least uncertain."""


def pool_size(k: int, pool: int | None) -> int:
    """Documents to retrieve before reranking down to K: POOL, else POOL_FACTOR·K."""
    return POOL_FACTOR * k if pool is None else pool


def mean_entropy(tops: Sequence[Iterable[float]]) -> float | None:
    """The length-normalised entropy of a generation: the mean over its positions of each
    position's entropy in nats (`triggers.entropy` of its top logprobs); None for no token."""
    if not tops:
        return None
    return sum(entropy(list(top)) for top in tops) / len(tops)


def rerank(entropies: Sequence[float | None], k: int) -> list[int]:
    """The positions of the K lowest ENTROPIES, lowest first; ties keep the retriever's order
    and a generation without tokens (None) ranks after every scored one, as the authors rank
    a snippet whose greedy step came out empty last."""
    order = sorted(range(len(entropies)),
                   key=lambda i: (entropies[i] is None, entropies[i] or 0.0, i))
    return order[:k]

