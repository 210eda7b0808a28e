"""Summaries of a run's rows: each method's means with 95% bootstrap intervals, costs and
retrieval rates, and every method after the first against the first (paired sign-flip test)."""

from __future__ import annotations

from typing import Any

from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p

QUALITY_KEYS = ("em", "f1", "precision", "recall", "rouge_l", "gold_title_recall",
                "gold_word_recall", "gold_half_recall", "em_flare_rule", "f1_flare_rule")
"""em and f1 are each method's by its authors' rule; em_flare_rule and f1_flare_rule the same
answers by FLARE's ("" without "answer is"), kept only for methods whose rule differs."""
COST_KEYS = ("lm_calls", "prompt_tokens", "generated_tokens", "answer_tokens", "retrievals",
             "retrieval_steps")


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the metrics with 95% bootstrap intervals, totals of the costs, retrieval rates.

    retrieval_rate is the paper's (sentences that retrieved / sentences); retrievals_per_question
    and retrievals_per_100_tokens count retrieval steps (the one with the question included),
    which compare across methods whatever unit they generate in.
    """
    n = len(rows)
    if not n:
        return {"n": 0}
    out: dict[str, Any] = {"n": n}
    for key in QUALITY_KEYS:
        values = [r[key] for r in rows if r.get(key) is not None]
        if values:
            out[key] = sum(values) / len(values)
            out[f"{key}_ci"] = list(bootstrap_ci(values))
    sentences = sum(r["sentences"] for r in rows)
    out["retrieval_rate"] = sum(r["retrieved_sentences"] for r in rows) / max(1, sentences)
    for key in COST_KEYS:
        out[key] = sum(r.get(key, 0) for r in rows)
    out["retrievals_per_question"] = out["retrieval_steps"] / n
    out["retrievals_per_100_tokens"] = 100 * out["retrieval_steps"] / max(1, out["answer_tokens"])
    out["generated_per_kept_token"] = out["generated_tokens"] / max(1, out["answer_tokens"])
    out["lm_calls_per_question"] = out["lm_calls"] / n
    out["seconds_per_question"] = sum(r["seconds"] for r in rows) / n
    if any("stage_seconds" in r for r in rows):  # long-context runs
        stages = sorted({k for r in rows for k in r.get("stage_seconds", {})})
        out["stage_seconds"] = {k: sum(r.get("stage_seconds", {}).get(k, 0.0) for r in rows) / n
                                for k in stages}
        out["words_read"] = sum(r.get("words_read", 0) for r in rows) / n
        out["fallback_rate"] = sum(1 for r in rows if r.get("route") == "long_context") / n
        out["latency_seconds"] = sum(latency(r) for r in rows) / n
    if any("confidence" in r for r in rows):  # the adaptive app
        out["flare_share"] = sum(1 for r in rows if r.get("route") == "flare") / n
    return out


def latency(row: dict[str, Any]) -> float:
    """A row's wall time, with light samples served from the cache counted at what their draw
    took (`eval --cache-samples`): the seconds the question costs without the cache."""
    stages = row.get("stage_seconds", {})
    if "sample_drawn" not in stages:
        return row["seconds"]
    return row["seconds"] - stages.get("sample", 0.0) + stages["sample_drawn"]


def versus(rows: list[dict[str, Any]], first_rows: list[dict[str, Any]],
           first: str) -> dict[str, Any]:
    """Mean differences from method FIRST and their paired sign-flip p-values, on the examples
    both scored (paired by id)."""
    theirs = {r["id"]: r for r in first_rows}
    out: dict[str, Any] = {"method": first, "n": sum(1 for r in rows if r["id"] in theirs)}
    for key in QUALITY_KEYS:
        pairs = [(r[key], theirs[r["id"]][key]) for r in rows
                 if r.get(key) is not None and theirs.get(r["id"], {}).get(key) is not None]
        if pairs:
            ours, base = [a for a, _ in pairs], [b for _, b in pairs]
            out[f"{key}_diff"] = (sum(ours) - sum(base)) / len(pairs)
            out[f"{key}_p"] = paired_permutation_p(ours, base)
    return out


def summarise_methods(rows: list[dict[str, Any]], methods: list[str]) -> dict[str, Any]:
    """The summary of each method; every method after the first also gets `vs_first`."""
    by_method = {m: [r for r in rows if r["method"] == m] for m in methods}
    out = {m: summarise(by_method[m]) for m in methods}
    first = methods[0] if methods else ""
    for m in methods[1:]:
        if by_method[m] and by_method[first]:
            out[m]["vs_first"] = versus(by_method[m], by_method[first], first)
    return out
