"""The margin gate's settings: the uncertainty gates' (GateContext) with the margin as the
estimator and the prefix of the answer it reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from activerag import trigger_names
from activerag.context_checks import at_least, documented
from activerag.nodes.gated.context import GateContext

trigger_names.declare_estimator("margin", top_logprobs=2)


@documented
@dataclass(kw_only=True)
class MarginContext(GateContext):
    """Settings of one margin-gate run (after TARG, Wang et al. 2025): the gated graph of the
    uncertainty gates, its estimate the mean top-1/top-2 log-probability margin of the first
    tokens of the answer written without documents; retrieve when it is below the threshold
    (gate_threshold, else the estimator's own). The other fields are the gates' own."""

    reads_alternatives: ClassVar[int] = 2
    """Top logprobs per token the margin reads: the two best alternatives."""
    estimator: str = "margin"
    """The uncertainty estimator (the margin; any registered one may stand in)."""
    margin_prefix: int = 16
    """How many of the answer's first tokens the margin is averaged over (0: all of them);
    TARG reads a short prefix of the draft."""

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 0, "margin_prefix")
