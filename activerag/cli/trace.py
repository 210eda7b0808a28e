"""What `ask --trace` prints: what each method decided. FLARE's and REPLUG's sentences (with
REPLUG's document weights) and FB-RAG's stages as the graph streams them; single-time and no
retrieval, which stream nothing, from the final state; the app, whose methods run inside its
nodes, from the final state too: each method it ran, single's confidence against
min_confidence, and the route."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activerag.evaluation.report import format_stage, format_step


def event(chunk: Mapping[str, Any]) -> str:
    """One streamed decision: an FB-RAG stage, or an accepted sentence."""
    return format_stage(chunk["stage"]) if "stage" in chunk else format_step(chunk["sentence"])


def after_run(final: Mapping[str, Any], ctx: object, streamed: bool) -> list[str]:
    """What the run decided that its stream did not show (STREAMED: sentences were shown)."""
    if "runs" in final:  # a method that ran others inside its nodes (the app)
        return app_decisions(final, ctx)
    if streamed:
        return []
    return [format_step(step) for step in final.get("trace", [])]


def app_decisions(final: Mapping[str, Any], ctx: Any) -> list[str]:
    """Each method the app ran, in order, with what it decided, then the route that answered
    (CTX: the app's context, whose min_confidence single's confidence is held against)."""
    lines = []
    for name, out in final.get("runs", {}).items():
        lines.append(f"[app: {name}]")
        if name == "fb_rag":
            lines.append(format_stage(fb_rag_stage(out)))
        else:
            lines += [format_step(step) for step in out.get("trace", [])]
        if name == "single":
            lines.append(confidence_line(final.get("confidence"), ctx.min_confidence,
                                         final.get("route") == "flare"))
    lines.append(f"[app] route: {final.get('route')}")
    return lines


def confidence_line(confidence: float | None, threshold: float, flare_took_over: bool) -> str:
    """How single's CONFIDENCE stood against the app's min_confidence THRESHOLD."""
    if confidence is None:
        return "  single's answer has no tokens to be sure of: FLARE answers instead"
    if flare_took_over:
        return (f"  single's confidence {confidence:.3f} < min_confidence {threshold:g}: "
                "FLARE answers instead")
    return (f"  single's confidence {confidence:.3f} >= min_confidence {threshold:g}: "
            "single's answer stands")


def fb_rag_stage(out: Mapping[str, Any]) -> dict[str, Any]:
    """FB-RAG's output (the app's fb_rag run) as one stage event: what stage I recalled, the
    samples, the chunks read, the answer, and the whole run's time."""
    shown = {k: out[k] for k in ("recall", "samples", "selected", "answer", "route",
                                 "truncated_tokens") if k in out}
    return {"name": "fb_rag", "seconds": sum(out.get("stage_seconds", {}).values()), **shown}
