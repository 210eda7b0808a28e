"""Human-readable rendering of traces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def format_step(step: Mapping[str, Any]) -> str:
    """One accepted sentence: its lowest token probability, the retrieval decision, the docs
    (REPLUG: how much of it was certified, the documents and their weights)."""
    if "weights" in step:
        return _format_replug(step)
    mp = step["min_prob"]
    flag = "RETRIEVED" if step["retrieved"] else "kept"
    lines = [f"[{step['index']}] min p={'-' if mp is None else round(mp, 3)}  {flag}"]
    if step["retrieved"]:
        lines.append(f"    draft:   {step['draft'].strip()}")
    if step["queries"]:
        note = "  (matched nothing: searched the question)" if step.get("fallback") else ""
        lines.append(f"    queries: {step['queries']}{note}")
    if step["doc_titles"]:
        docs = ", ".join(f"{t} ({i[:8]})" for t, i in zip(step["doc_titles"], step["doc_ids"],
                                                         strict=True))
        lines.append(f"    docs:    {docs}")
    if step.get("rerank"):
        lines.append(_format_rerank(step["rerank"]))
    if step.get("why"):
        lines.append(_format_why(step["why"]))
    if "new_titles" in step:
        lines.append(_format_collected(step))
    lines.append(f"    => {step['sentence']}")
    return "\n".join(lines)


def _format_rerank(entries: list[Mapping[str, Any]]) -> str:
    """SeaKR-lite's pool, least uncertain first: each title, its entropy, its kept place."""
    ranked = sorted(entries, key=lambda e: (e["entropy"] is None, e["entropy"] or 0.0,
                                            e["rank"]))
    shown = [f"{e['title']} {'-' if e['entropy'] is None else round(e['entropy'], 3)}"
             + ("" if e["kept"] is None else f" [kept {e['kept'] + 1}]") for e in ranked]
    return "    reranked (mean entropy, nats): " + ", ".join(shown)


def _format_why(why: Mapping[str, Any]) -> str:
    """An uncertainty gate's, ETC's or DRAGIN-lite's decision: its value against its threshold
    (where a word-level trigger fired, that word) and whether it fired."""
    value = why.get("value")
    at = f" at word {why['at']} {why.get('word', '')!r}" if why.get("at") is not None else ""
    shown = "-" if value is None else f"{value:.3g}"
    verdict = "fired" if why.get("fired") else "did not fire"
    return (f"    why:     {why.get('estimator') or why.get('trigger')}{at} {shown} "
            f"(threshold {why.get('threshold', 0):g}): {verdict}")


def _format_replug(step: Mapping[str, Any]) -> str:
    lines = [f"[{step['index']}] certified {step['certified']:.0%} of its tokens"]
    docs = ", ".join(f"{t} ({w:.2f})" for t, w in zip(step["doc_titles"], step["weights"],
                                                       strict=True))
    lines.append(f"    docs (λ): {docs}")
    if step.get("candidates"):
        lines.append("    answers: " + ", ".join(f"{a!r} {v:.3g}" for a, v in step["candidates"]))
    lines.append(f"    => {step['sentence']}")
    return "\n".join(lines)


def format_trace(trace: list[Mapping[str, Any]]) -> str:
    """Every step of a trace."""
    return "\n".join(format_step(s) for s in trace)


def format_stage(stage: Mapping[str, Any]) -> str:
    """One FB-RAG stage event as a line: its name, time and what it chose."""
    shown = []
    for key in ("recall", "selected"):
        if key in stage:
            shown.append(f"{key} chunks {stage[key]}")
    if "samples" in stage:
        shown += [f"sample {i + 1}: {s.strip()[:120]!r}" for i, s in enumerate(stage["samples"])]
    if "answer" in stage:
        shown.append(f"answer {stage['answer']!r} ({stage.get('route', '')})")
    if stage.get("truncated_tokens"):
        shown.append(f"{stage['truncated_tokens']} prompt tokens cut from the middle")
    head = f"[{stage['name']} {stage['seconds']:.2f}s]"
    return "\n".join([head, *(f"  {line}" for line in shown)])


def _format_collected(step: Mapping[str, Any]) -> str:
    """An IRCoT step: the paragraphs its retrieval added to the collection (and how many it
    found but left out), and why the chain stopped after it; or the reader."""
    if step.get("role") == "read":
        return "    reader:  the whole chain again, over every collected paragraph"
    left = (f"  ({step['left_out']} left out: collected already or past the cap)"
            if step.get("left_out") else "")
    line = f"    added:   {', '.join(step['new_titles']) or 'none'}{left}"
    return line + (f"\n    stop:    {step['stop']}" if step.get("stop") else "")
