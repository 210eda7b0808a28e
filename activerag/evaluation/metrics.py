"""The QA metrics of the FLARE paper (EM, token F1, precision, recall); answers are found and
normalised by activerag.answers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from activerag.answers import extract_answer, normalize


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer."""
    p = normalize(prediction)
    return float(any(p == normalize(g) for g in golds))


def token_prf(prediction: str, gold: str) -> tuple[float, float, float]:
    """Token-level precision, recall and F1 of one prediction against one gold answer.

    As in the HotpotQA/2Wiki scorer, yes/no/noanswer only match themselves: "no" against
    "yes no" scores 0, not a partial overlap.
    """
    p_norm, g_norm = normalize(prediction), normalize(gold)
    special = ("yes", "no", "noanswer")
    if (p_norm in special or g_norm in special) and p_norm != g_norm:
        return 0.0, 0.0, 0.0
    return _overlap_prf(p_norm.split(), g_norm.split())


def _overlap_prf(p: list[str], g: list[str]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the tokens P and G have in common (counted with repeats)."""
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(p), common / len(g)
    return precision, recall, 2 * precision * recall / (precision + recall)


def qa_f1(prediction: str, golds: Iterable[str]) -> float:
    """LongBench's qa_f1: the best token F1 over the gold answers, after SQuAD normalisation,
    with no special case for yes/no ("Yes, both are." earns partial credit against "yes")."""
    p = normalize(prediction).split()
    return max((_overlap_prf(p, normalize(g).split())[2] for g in golds), default=0.0)


def best_prf(prediction: str, golds: Iterable[str]) -> tuple[float, float, float]:
    """Precision, recall and F1, each the best over the gold answer and its aliases.

    The authors' scorer maximises the three separately, so precision and recall may come from
    different aliases.
    """
    scores = [token_prf(prediction, g) for g in golds]
    if not scores:
        return 0.0, 0.0, 0.0
    return tuple(max(s[i] for s in scores) for i in range(3))  # type: ignore[return-value]


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
