"""What LSR optimises: its settings, the teacher prompts, the loss of Eq. 5, the learning-rate
schedule, the retrieval rounds and an answer's LM score. Pure but for torch in the loss."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from activerag.errors import ActiveRagError

TEACHER_PROMPTS = {"qa": "{passage}\n\nQuestion: {question}\nAnswer:",
                   "lm": "{passage}\n\n{question}"}
"""The prompt under which the LM scores y given one passage (y follows after a space): a
question and its answer, or (the LM task) a text's first half and its second half."""


@dataclass
class LSRConfig:
    """How the query encoder is trained; defaults follow §5.2 where the CPU allows."""

    k: int = 10
    """Passages retrieved per question (the paper uses 20)."""
    gamma: float = 0.1
    """Retriever temperature γ of Eq. 3."""
    beta: float = 0.1
    """LM temperature β of Eq. 4."""
    lm_score: Literal["mean", "sum"] = "mean"
    """y's log-probability per token (under which β = 0.1 is sensible) or in total."""
    direction: Literal["paper", "reverse"] = "paper"
    """KL(P_R ‖ Q) as in Eq. 5, or the official code's KL(Q ‖ P_R)."""
    lr: float = 2e-5
    batch: int = 16
    epochs: int = 3
    warmup: float = 0.1
    """Share of all steps over which the learning rate rises linearly from 0 (then it decays
    linearly to 0)."""
    seed: int = 0
    checkpoint_every: int = 10
    """Steps between checkpoints (and at every epoch's end)."""
    teacher: Literal["lm", "shuffled"] = "lm"
    """shuffled: each question's LM scores permuted among its passages, a control that keeps
    the questions, passages and steps but not the LM's preferences."""
    task: Literal["qa", "lm"] = "qa"
    """qa: x a question, y its gold answer. lm: x the first half of a corpus passage, y the
    second, passages of x's own title never retrieved (§5.2 avoids trivial retrieval)."""
    reembed_every: int = 0
    """0: passage embeddings stay frozen (the tower is a query tower only). T > 0: the tower
    encodes the passages too, and every T steps they are re-embedded with it and retrieval
    starts again from the new index (§4.4), for a corpus small enough to re-embed; the encoder
    folder then keeps its own copy of the passages (`index/`)."""

    def check(self) -> None:
        if self.k < 2:
            raise ActiveRagError("LSR needs k >= 2 passages per question (a distribution over "
                                 "one passage carries no signal)")
        for name in ("gamma", "beta", "lr"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ActiveRagError(f"{name} must be positive (and finite), got {value}")
        if not 0.0 <= self.warmup <= 1.0:
            raise ActiveRagError(f"warmup is a share of the steps and must lie in [0, 1], got "
                                 f"{self.warmup}")
        for name in ("batch", "epochs", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ActiveRagError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.reembed_every < 0:
            raise ActiveRagError(f"reembed_every must be 0 (never) or a number of steps, got "
                                 f"{self.reembed_every}")


def lsr_loss(retriever_scores: Any, lm_scores: Any, gamma: float, beta: float,
             direction: Literal["paper", "reverse"] = "paper") -> Any:
    """Eq. 5: the batch mean over questions of KL(P_R ‖ Q), P_R = softmax(s/γ) and Q =
    softmax(lm/β) over each row's passages; Q carries no gradient. Tensors are [batch, k]."""
    import torch

    log_p = torch.log_softmax(retriever_scores / gamma, dim=-1)
    log_q = torch.log_softmax(lm_scores.detach() / beta, dim=-1)
    if direction == "paper":
        per_question = (log_p.exp() * (log_p - log_q)).sum(dim=-1)
    else:
        per_question = (log_q.exp() * (log_q - log_p)).sum(dim=-1)
    return per_question.mean()


def lr_factor(step: int, total: int, warmup: float) -> float:
    """Linear warm-up over the first WARMUP share of TOTAL steps, then linear decay to 0."""
    rise = max(1, round(total * warmup))
    if step < rise:
        return (step + 1) / rise
    return max(0.0, (total - step) / max(1, total - rise))


def training_round(step: int, per_epoch: int, reembed_every: int = 0) -> tuple[int, int, int]:
    """The retrieval round STEP falls in: (epoch, first step, step after the last). A round is an
    epoch, cut where the passages are re-embedded (every REEMBED_EVERY steps, when non-zero);
    each round retrieves afresh with the encoder as it begins."""
    epoch = step // per_epoch
    first, end = epoch * per_epoch, (epoch + 1) * per_epoch
    if reembed_every:
        first = max(first, step // reembed_every * reembed_every)
        end = min(end, (step // reembed_every + 1) * reembed_every)
    return epoch, first, end


def lm_score(logprobs: Sequence[float], kind: Literal["mean", "sum"]) -> float:
    """An answer's LM score from its token log-probabilities."""
    if not logprobs:
        raise ActiveRagError("cannot score an empty answer")
    total = math.fsum(logprobs)
    return total / len(logprobs) if kind == "mean" else total
