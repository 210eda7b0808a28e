"""The nodes of FLARE-direct (Jiang et al. 2023, §3.2): small steps that return state updates.

Nodes that need the LM or the retriever are made by `make_*` factories over `Parts`, so a
graph can be built with given components or with ones made from the run's context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from activerag.nodes.logic import (
    interleave,
    low_confidence_spans,
    masked_query,
    should_retrieve,
)
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import answer_prompt, question_prompt
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.errors import EmptyQuestion
from activerag.lm import Generation
from activerag.state import FlareState, StepTrace

Update = dict[str, Any]
Node = Callable[[FlareState, Runtime[FlareContext]], Awaitable[Update]]


def begin(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Check the question and queue the initial query x (FLARE Appendix A)."""
    question = (state.get("question") or "").strip()
    if not question:
        raise EmptyQuestion("the question is empty; pass a non-empty 'question'")
    queries = [question] if runtime.context.initial_retrieval else []
    return {"question": question, "answer": "", "answer_tokens": 0, "done": False,
            "step": {"queries": queries}}


def _remaining_tokens(state: FlareState, ctx: FlareContext) -> int:
    left = ctx.max_answer_tokens - state.get("answer_tokens", 0)
    return max(1, min(ctx.max_sentence_tokens, left))


async def _next_sentence(parts: Parts, state: FlareState, ctx: FlareContext,
                         with_docs: bool) -> Generation:
    docs = state.get("step", {}).get("documents", []) if with_docs else []
    prompt = answer_prompt(state["question"], state.get("answer", ""), docs, ctx.prompt_format)
    lm, splitter = await parts.lm_for(ctx), await parts.splitter_for(ctx)
    return await lm.generate(
        prompt, max_tokens=_remaining_tokens(state, ctx), cut=splitter.first_sentence_end
    )


def make_draft(parts: Parts) -> Node:
    """Node: the temporary next sentence ŝ_t = LM([x, y_<t]); the first uses D_x."""

    async def draft(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        gen = await _next_sentence(parts, state, runtime.context, with_docs=True)
        tokens = [(t.text, t.prob, t.start) for t in gen.tokens]
        return {"step": {"draft": gen.text, "tokens": tokens, "finished": gen.finished},
                "lm_calls": 1, "generated_tokens": gen.generated_tokens}

    return draft


def confidence_gate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: fire retrieval if any draft token has probability below θ (FLARE §3.2.1)."""
    step = state.get("step", {})
    probs = [p for _, p, _ in step.get("tokens", [])]
    fire = bool(step.get("draft", "").strip()) and should_retrieve(probs, runtime.context.theta)
    return {"step": {"fire": fire}}


def make_formulate_query(parts: Parts) -> Node:
    """Node: queries from the draft, masked (implicit) or generated questions (explicit)."""

    async def formulate_query(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        draft, tokens = step.get("draft", ""), step.get("tokens", [])
        if ctx.query_formulation == "implicit":
            # FLARE §3.2.2: mask tokens with p < beta; an all-masked draft falls back to x.
            return {"step": {"queries": [masked_query(tokens, ctx.beta) or state["question"]]}}
        spans = low_confidence_spans(tokens, ctx.beta, draft)
        if not spans:
            return {"step": {"queries": [" ".join(draft.split()) or state["question"]]}}
        lm = await parts.lm_for(ctx)
        passage = state.get("answer", "") + draft
        gens = await asyncio.gather(*[
            lm.generate(question_prompt(state["question"], passage, span, ctx.prompt_format),
                        max_tokens=ctx.max_question_tokens, stop=["\n"])
            for span in spans
        ])
        queries = [" ".join(g.text.split()) or span for g, span in zip(gens, spans, strict=True)]
        return {"step": {"queries": queries}, "lm_calls": len(gens),
                "generated_tokens": sum(g.generated_tokens for g in gens)}

    return formulate_query


def make_retrieve(parts: Parts) -> Node:
    """Node: retrieve for each query and interleave the rankings into the top k."""

    async def retrieve(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        queries = state.get("step", {}).get("queries", [])
        rankings = await asyncio.gather(*[parts.search(ctx, q) for q in queries])
        return {"step": {"documents": interleave(rankings, ctx.k)}, "retrievals": len(queries)}

    return retrieve


def make_regenerate(parts: Parts) -> Node:
    """Node: s_t = LM([D_qt, x, y_<t]) with this step's documents only (FLARE §2.3)."""

    async def regenerate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        gen = await _next_sentence(parts, state, runtime.context, with_docs=True)
        return {"step": {"sentence": gen.text, "sentence_finished": gen.finished,
                         "sentence_tokens": len(gen.tokens)},
                "lm_calls": 1, "generated_tokens": gen.generated_tokens}

    return regenerate


def accept(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: append the decided sentence to the answer, record its trace, decide if done."""
    ctx = runtime.context
    step = state.get("step", {})
    fired = bool(step.get("fire"))
    sentence = step.get("sentence", "") if fired else step.get("draft", "")
    finished = step.get("sentence_finished" if fired else "finished", False)
    n_tokens = step.get("sentence_tokens", 0) if fired else len(step.get("tokens", []))
    tokens = step.get("tokens", [])
    docs = step.get("documents", [])
    trace: StepTrace = {
        "index": len(state.get("trace", [])),
        "draft": step.get("draft", ""),
        "draft_tokens": [(t, p) for t, p, _ in tokens],
        "min_prob": min((p for _, p, _ in tokens), default=None),
        "retrieved": fired,
        "queries": list(step.get("queries", [])),
        "doc_ids": [d.id or "" for d in docs],
        "doc_titles": [d.metadata.get("title", "") for d in docs],
        "sentence": sentence.strip(),
    }
    answer = state.get("answer", "") + sentence
    answer_tokens = state.get("answer_tokens", 0) + n_tokens
    done = (finished or not sentence.strip() or trace["index"] + 1 >= ctx.max_sentences
            or answer_tokens >= ctx.max_answer_tokens)
    get_stream_writer()({"sentence": trace})
    return {"answer": answer, "answer_tokens": answer_tokens, "done": done,
            "trace": [trace], "step": {}}


def route_after_begin(state: FlareState) -> Literal["retrieve", "draft"]:
    """Retrieve with x first when the initial query is queued."""
    return "retrieve" if state.get("step", {}).get("queries") else "draft"


def route_after_retrieve(state: FlareState) -> Literal["draft", "regenerate"]:
    """Initial retrieval feeds the first draft; a fired gate's retrieval feeds regeneration."""
    step = state.get("step", {})
    if "draft" not in step:
        return "draft"
    if not step.get("fire"):
        raise RuntimeError("retrieval ran after a draft the gate accepted")
    return "regenerate"


def route_after_gate(state: FlareState) -> Literal["formulate_query", "accept"]:
    """Formulate a query when the gate fired, else accept the draft."""
    return "formulate_query" if state.get("step", {}).get("fire") else "accept"


def route_after_accept(state: FlareState) -> Literal["draft", "__end__"]:
    """Draft the next sentence until the answer is done."""
    return "__end__" if state.get("done") else "draft"
