"""FLARE-direct's own steps (Jiang et al. 2023, §3.2): the draft of the next sentence, the gate's
routing, and query formulation from the draft (masked, or generated questions). The sentence
loop they run in (begin, retrieve, generate, accept), which the family and the families built on
it share, is nodes/loop.py.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.base import Update, lm_cost, node_name
from activerag.nodes.decisions import masks, written
from activerag.nodes.flare.logic import low_confidence_spans
from activerag.nodes.loop import FlareNode, generate_unit, prompt_documents
from activerag.nodes.loop_logic import mask_flags, masked_query, question_words
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import (
    question_prompt,
)
from activerag.state import FlareState


def make_draft(parts: Parts) -> FlareNode:
    """Node: the temporary next sentence ŝ_t = LM([x, y_<t]).

    The first draft sees D_x (Appendix A); later ones see the last retrieved documents when
    keep_documents is on (the authors' code), none otherwise (§3.2.1 as written).
    """

    async def draft(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        docs = prompt_documents(state, runtime.context)
        gen = await generate_unit(parts, state, runtime.context, "sentence", docs)
        tokens = [(t.text, t.prob, t.start) for t in gen.tokens]
        tops = {"tops": [tuple(t.top) for t in gen.tokens]} if any(
            t.top for t in gen.tokens) else {}
        return {"step": {"draft": gen.text, "tokens": tokens, "finished": gen.finished,
                         "complete": gen.complete, "seen": docs, **tops}, **lm_cost(gen),
                "decision": written(gen)}

    return draft


def route_after_gate(state: FlareState) -> Literal["formulate_query", "accept"]:
    """Formulate a query when the gate fired, else accept the draft."""
    return "formulate_query" if state.get("step", {}).get("fire") else "accept"


def whole_draft_query(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: the complete next sentence as the query (Table 3's "Next", β = 0)."""
    draft = " ".join(state.get("step", {}).get("draft", "").split())
    queries = [draft or state["question"]]
    return {"step": {"queries": queries},
            "decision": {"node": node_name() or "formulate_query", "formulation": "whole",
                         "queries": queries, "fallback": not draft}}


def make_formulate_query(parts: Parts) -> FlareNode:
    """Node: queries from the draft, masked (implicit) or generated questions (explicit)."""

    async def formulate_query(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        draft, tokens = step.get("draft", ""), step.get("tokens", [])
        if ctx.query_formulation == "implicit":
            # FLARE §3.2.2: mask tokens with p < beta; an all-masked draft falls back to x.
            keep = question_words(state["question"]) if ctx.keep_question_words else frozenset()
            query = masked_query(tokens, ctx.beta, ctx.mask_unit, keep)
            queries = [query or state["question"]]
            shown = masks(tokens, mask_flags(tokens, ctx.beta, ctx.mask_unit, keep))
            return {"step": {"queries": queries, "fallback": not query},
                    "decision": {**shown, "formulation": "implicit", "beta": ctx.beta,
                                 "queries": queries, "fallback": not query}}
        spans = low_confidence_spans(tokens, ctx.beta, draft, ctx.span_merge_gap)
        shown = {**masks(tokens, [p < ctx.beta for _, p, _ in tokens]),
                 "formulation": "explicit", "beta": ctx.beta, "spans": spans}
        if not spans:
            queries = [" ".join(draft.split()) or state["question"]]
            return {"step": {"queries": queries},
                    "decision": {**shown, "queries": queries, "fallback": not draft.strip()}}
        lm = await parts.lm_for(ctx)
        layout = await parts.layout_for(ctx)
        passage = state.get("answer", "") + draft
        gens = await asyncio.gather(*[
            lm.generate(question_prompt(state["question"], passage, span, layout),
                        max_tokens=ctx.max_question_tokens, stop=["\n"])
            for span in spans
        ])
        queries = [" ".join(g.text.split()) or span for g, span in zip(gens, spans, strict=True)]
        return {"step": {"queries": queries}, **lm_cost(*gens),
                "decision": {**shown, "queries": queries, "fallback": False}}

    return formulate_query
