"""REPLUG's settings (Shi et al. 2023): how many documents, how they are weighted and how
their next-token distributions are ensembled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from activerag.context import ServingContext
from activerag.context_checks import at_least, documented, refuse


@documented
@dataclass(kw_only=True)
class ReplugContext(ServingContext):
    """Settings of one REPLUG run (Shi et al. 2023): how many documents, how they are weighted
    and how their next-token distributions are ensembled."""

    k: int = 10
    """Documents ensembled (the paper's top-10)."""
    ensemble: Literal["token", "agree", "vote", "rescore"] = "agree"
    """token: Eq. 2 at every position, one request per document and token; agree: the same
    tokens, each document looking ahead `lookahead` tokens while they agree; vote: the released
    code's answer-level vote; rescore: Eq. 2 exactly on the documents' greedy answers."""
    tau: float | None = None
    """λ = softmax(s / τ). None: τ = 1 on the store's scores, which is Eq. 2 for Chroma's
    cosine; BM25's raw scores are first divided by the top one, since their scale (tens)
    would make λ one-hot."""
    lookahead: int = 8
    """agree: greedy tokens each document proposes per round."""
    top_logprobs: int = 20
    """Top-N next-token log-probabilities per document and position (vLLM allows 20)."""

    def __post_init__(self) -> None:
        self._check()
        if self.tau is not None and self.tau <= 0:
            raise refuse("tau", "be positive", self.tau)
        at_least(self, 1, "lookahead", "top_logprobs")
