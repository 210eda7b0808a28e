"""Nodes of the adaptive QA app: route a question, run a method graph as a subgraph, and
judge single-time retrieval's answer by its tokens' probabilities."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langgraph.runtime import Runtime

from activerag.context import ServingContext
from activerag.nodes.app.context import AppContext
from activerag.nodes.app.state import AppState
from activerag.nodes.base import Node, Update, fresh_run
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.state import COUNTERS, StepTrace


def answer_confidence(trace: Sequence[StepTrace]) -> float | None:
    """The geometric mean of the probabilities of every token of the traced sentences (None:
    no tokens, nothing to be sure of)."""
    probs = [p for step in trace for _, p in step.get("draft_tokens", [])]
    if not probs:
        return None
    return math.exp(sum(math.log(max(p, 1e-12)) for p in probs) / len(probs))


def start(state: AppState) -> Update:
    """Check the question and clear what a previous run on this thread left."""
    return fresh_run(state, summed=False, answer="", route="", confidence=None, runs={},
                     answer_tokens=0)


def route_question(state: AppState) -> Literal["fb_rag", "single"]:
    """A question with its own long context goes to FB-RAG; any other to single-time retrieval."""
    return "fb_rag" if (state.get("context") or "").strip() else "single"


def route_after_single(state: AppState,
                       runtime: Runtime[AppContext]) -> Literal["flare", "__end__"]:
    """FLARE answers instead when single-time retrieval's answer is less sure than the
    context's min_confidence (an answer without tokens is not sure at all)."""
    confidence = state.get("confidence")
    if confidence is None or confidence < runtime.context.min_confidence:
        return "flare"
    return "__end__"


def fb_context(ctx: AppContext) -> FBRagContext:
    """FB-RAG's settings in CTX (a dict when the dev server built CTX from JSON), else its
    defaults over CTX's store."""
    if isinstance(ctx.fb, dict):
        return FBRagContext(**ctx.fb)
    return ctx.fb or FBRagContext(store_dir=ctx.store_dir)


def make_run_method(name: str, graph: Any,
                    context_of: Callable[[AppContext], ServingContext], *,
                    judged: bool = False) -> Node[AppState, AppContext]:
    """Node: run method graph GRAPH (a subgraph: Studio draws it inside the app, and its
    events stream as the subgraph's) with the settings CONTEXT_OF picks from the app's; its
    answer becomes the app's, and its costs are added to the run's. JUDGED: its answer's
    confidence is kept, for the router after it."""

    async def run_method(state: AppState, runtime: Runtime[AppContext]) -> Update:
        given = {"question": state["question"]}
        if state.get("context"):
            given["context"] = state["context"]
        out = await graph.ainvoke(given, context=context_of(runtime.context))
        update: Update = {
            "answer": out.get("answer", ""), "route": name,
            "runs": {**state.get("runs", {}), name: out},
            "trace": out.get("trace", []), "answer_tokens": out.get("answer_tokens", 0),
            "retrieved_titles": [*state.get("retrieved_titles", []),
                                 *out.get("retrieved_titles", [])],
            **{c: state.get(c, 0) + out.get(c, 0) for c in COUNTERS}}
        if judged:
            update["confidence"] = answer_confidence(out.get("trace", []))
        return update

    run_method.__name__ = name
    return run_method
