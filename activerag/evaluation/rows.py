"""One evaluation row: an answer scored by its method's authors' rule, and the costs and
trace counts of the run that made it (the harness in evaluate.py stores these rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from activerag.answers import AnswerRule, extract_answer
from activerag.evaluation.datasets import Example
from activerag.evaluation.metrics import best_prf, exact_match, qa_f1, rouge_l, str_em, yes_no
from activerag.graphs.registry import answer_rule


def score(example: Example, answer: str, retrieved_titles: list[str],
          rule: AnswerRule = "empty") -> dict[str, Any]:
    """Quality metrics of one answer, by the kind of the example; a short answer by RULE (its
    method's authors' rule), and where RULE is not FLARE's also by FLARE's (`em_flare_rule`,
    `f1_flare_rule`), so that both numbers can be shown."""
    out: dict[str, Any] = {}
    if example.kind == "short":
        prediction = extract_answer(answer, rule=rule)
        precision, recall, f1 = best_prf(prediction, example.answers)
        out.update(prediction=prediction, em=exact_match(prediction, example.answers), f1=f1,
                   precision=precision, recall=recall)
        if rule != "empty":
            strict = extract_answer(answer)
            out.update(em_flare_rule=exact_match(strict, example.answers),
                       f1_flare_rule=best_prf(strict, example.answers)[2])
    elif example.kind == "longbench":
        out.update(prediction=answer, em=exact_match(answer, example.answers),
                   f1=qa_f1(answer, example.answers))
    elif example.kind == "yesno":
        prediction = yes_no(answer)
        out.update(prediction=prediction, em=float(prediction == example.answers[0]))
    else:
        out.update(em=str_em(answer, example.short_answers),
                   rouge_l=rouge_l(answer, example.answers))
    gold = set(example.gold_titles)
    out["gold_title_recall"] = len(gold & set(retrieved_titles)) / len(gold) if gold else None
    return out


def gold_read(example: Example, spans: Sequence[Sequence[int]]) -> dict[str, float | None]:
    """How much of the example's gold paragraphs the SPANS read: the share of their words
    (gold_word_recall), and the share of them read at least half (gold_half_recall)."""
    from activerag.nodes.fb_rag.logic import gold_half_recall, gold_word_recall

    read = [(int(a), int(b)) for a, b in spans]
    return {"gold_word_recall": gold_word_recall(read, example.gold_spans),
            "gold_half_recall": gold_half_recall(read, example.gold_spans)}


def long_context_fields(example: Example, out: dict[str, Any]) -> dict[str, Any]:
    """What a long-context run (FB-RAG and its baselines) adds to its row: the route taken,
    the time per stage, the word spans read (and how much of the gold they cover) and the light
    LM's samples, so that a row can be scored again and FB-RAG's ranking redone."""
    if "selected_spans" not in out:
        return {}
    spans = [list(s) for s in out["selected_spans"]]
    return {"route": out.get("route", ""), "stage_seconds": out.get("stage_seconds", {}),
            "words_read": sum(b - a for a, b in spans), "selected_spans": spans,
            "truncated_tokens": out.get("truncated_tokens", 0), **gold_read(example, spans),
            **({"samples": out["samples"]} if out.get("samples") is not None else {})}


def row_of(name: str, example: Example, out: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The stored line of one finished run: answer, trace summary, metrics and costs."""
    trace = out.get("trace", [])
    return {
        "method": name, "id": example.id, "answer": out.get("answer", ""),
        "retrieved_titles": out.get("retrieved_titles", []),
        **score(example, out.get("answer", ""), out.get("retrieved_titles", []),
                answer_rule(name)),
        "sentences": len(trace),
        "retrieved_sentences": sum(1 for s in trace if s.get("retrieved")),
        "lm_calls": out.get("lm_calls", 0),
        "prompt_tokens": out.get("prompt_tokens", 0),
        "generated_tokens": out.get("generated_tokens", 0),
        "answer_tokens": out.get("answer_tokens", 0),
        "retrievals": out.get("retrievals", 0),
        "retrieval_steps": out.get("retrieval_steps", 0),
        **({"certified": out["certified"]} if "certified" in out else {}),
        **long_context_fields(example, out),
        **({"route": out.get("route", ""), "confidence": out.get("confidence")}
           if "runs" in out else {}),  # the adaptive app: which method answered, and why
        "group": example.group,
        "seconds": seconds,
    }
