"""Answer extraction and the QA metrics of the FLARE paper (EM, token F1, precision, recall)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ANSWER = re.compile(r"answer is:?\s*(.+?)(?:\.\s*$|\.\s|\n|$)", re.IGNORECASE | re.DOTALL)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def extract_answer(text: str) -> str:
    """The final answer after the paper's 'So the answer is ...'; else the last sentence."""
    matches = list(_ANSWER.finditer(text))
    if matches:
        return matches[-1].group(1).strip()
    lines = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
    return lines[-1].rstrip(".") if lines else ""


def normalize(text: str) -> str:
    """Standard SQuAD normalisation: lower case, no punctuation, articles or extra spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer."""
    p = normalize(prediction)
    return float(any(p == normalize(g) for g in golds))


def token_prf(prediction: str, gold: str) -> tuple[float, float, float]:
    """Token-level precision, recall and F1 of one prediction against one gold answer."""
    p, g = normalize(prediction).split(), normalize(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or common == 0:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(p), common / len(g)
    return precision, recall, 2 * precision * recall / (precision + recall)


def best_prf(prediction: str, golds: Iterable[str]) -> tuple[float, float, float]:
    """Precision, recall, F1 against the gold answer with the highest F1."""
    return max((token_prf(prediction, g) for g in golds), key=lambda x: x[2],
               default=(0.0, 0.0, 0.0))
