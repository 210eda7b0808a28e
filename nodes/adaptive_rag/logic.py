"""Adaptive-RAG's pure logic (Jeong et al. 2024): the silver label of a training question, the
query-complexity classifier's logistic regression, and the parse of the prompt classifier's
reply."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

Label = Literal["A", "B", "C"]
LABELS: tuple[Label, ...] = ("A", "B", "C")
"""The complexity labels, simplest first (§3.2): A no retrieval, B single-step, C multi-step."""
HOPS_LABEL: dict[str, Label] = {"single-hop": "B", "multi-hop": "C"}
"""The label a question none of the strategies answers gets from its dataset's inductive bias
(§3.3): a single-hop dataset's questions need one retrieval, a multi-hop one's several."""


def silver_label(correct: Mapping[Label, bool], fallback: Label) -> Label:
    """§3.3: the simplest strategy that answers correctly (A before B before C, so a tie goes to
    the simpler); FALLBACK (the dataset's inductive bias) when none does."""
    for label in LABELS:
        if correct.get(label, False):
            return label
    return fallback


def deciding_labels(fallback: Label) -> tuple[Label, ...]:
    """The labels whose strategies' answers can change a silver label: all three, except the
    last when it is FALLBACK itself (right or wrong, its answer then gives the same label, so
    a multi-hop dataset's labels need no multi-step run)."""
    return LABELS[:-1] if fallback == LABELS[-1] else LABELS


def label_counts(labels: Sequence[str]) -> dict[str, int]:
    """How many of LABELS are A, B and C (each of the three listed, 0 included)."""
    return {label: sum(1 for x in labels if x == label) for label in LABELS}


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, shifted by each row's maximum so that no exponent overflows."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def probabilities(weights: np.ndarray, bias: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(label | x) of a multinomial logistic regression: softmax(x Wᵀ + b), one row per x."""
    return softmax(np.atleast_2d(x) @ weights.T + bias)


def fit_logistic(x: np.ndarray, y: Sequence[int], classes: int = 3, l2: float = 1e-3,
                 steps: int = 2000, tolerance: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression of labels Y (class indices) on rows X: the weights
    (classes × features) and biases that minimise the mean cross-entropy plus L2/2 ‖W‖², by
    full-batch gradient descent from zero with the step 1/L (L bounds the gradient's Lipschitz
    constant), until the gradient's largest entry is below TOLERANCE or STEPS run out.
    Deterministic: the same data give the same weights."""
    x = np.asarray(x, np.float64)
    n, d = x.shape
    targets = np.zeros((n, classes))
    targets[np.arange(n), np.asarray(y, int)] = 1.0
    with_bias = np.hstack([x, np.ones((n, 1))])
    lipschitz = 0.5 * np.linalg.norm(with_bias, 2) ** 2 / n + l2
    step = 1.0 / lipschitz
    w = np.zeros((classes, d + 1))
    for _ in range(steps):
        p = softmax(with_bias @ w.T)
        grad = (p - targets).T @ with_bias / n
        grad[:, :d] += l2 * w[:, :d]
        if np.abs(grad).max() < tolerance:
            break
        w -= step * grad
    return w[:, :d], w[:, d]


_LEAD = "\"'`*([{ \t\n"
_NAMED = re.compile(r"\b(?i:complexity|answer|label|level|option|category|class|rating)\b"
                    r"\s*(?:is|=|:)?\s*[\"'(\[]?([ABC])\b")
_BRACKETED = re.compile(r"[(\[]([ABC])[)\]]")


def parse_complexity(reply: str) -> Label | None:
    """The label the prompt classifier's REPLY gives: its first character when that is A, B
    or C standing alone ("B", "C.", "(A) no retrieval"; a lone lower-case letter too), else
    the letter after a word such as "complexity" or "answer" ("Answer: C"), else the first
    bracketed one ("... (B)"); None when it names none."""
    text = reply.strip().lstrip(_LEAD)
    if len(text) == 1 and text.upper() in LABELS:
        return text.upper()  # type: ignore[return-value]
    if text[:1] in LABELS and not text[1:2].isalnum():
        return text[0]  # type: ignore[return-value]
    named = _NAMED.search(reply)
    if named:
        return named.group(1)  # type: ignore[return-value]
    bracketed = _BRACKETED.search(reply)
    return bracketed.group(1) if bracketed else None  # type: ignore[return-value]
