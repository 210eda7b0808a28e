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


def yes_no(text: str) -> str:
    """StrategyQA: the yes/no of the extracted answer ('' when it is neither)."""
    words = normalize(extract_answer(text)).split()
    return words[0] if words and words[0] in ("yes", "no") else ""


def str_em(output: str, short_answers: list[list[str]]) -> float:
    """ASQA EM: the share of interpretations whose some short answer appears in the output."""
    if not short_answers:
        return 0.0
    text = normalize(output)
    hits = sum(any(normalize(a) and normalize(a) in text for a in group)
               for group in short_answers)
    return hits / len(short_answers)


def _lcs(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, references: Iterable[str]) -> float:
    """ROUGE-L F1 on normalised tokens, the best over the references."""
    p = normalize(prediction).split()
    best = 0.0
    for ref in references:
        r = normalize(ref).split()
        lcs = _lcs(p, r)
        if lcs:
            prec, rec = lcs / len(p), lcs / len(r)
            best = max(best, 2 * prec * rec / (prec + rec))
    return best
