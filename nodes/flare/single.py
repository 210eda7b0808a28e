"""Nodes of the single-pass baselines: the whole answer in one LM call (FLARE §2.2, §6)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.base import Update, lm_cost
from activerag.nodes.loop import FlareNode, generate_unit
from activerag.nodes.loop_logic import answer_end
from activerag.nodes.parts import Parts
from activerag.serving.generation import Generation
from activerag.state import FlareState, StepTrace


def make_generate_answer(parts: Parts) -> FlareNode:
    """Node: y = LM([D_x, x]) in one call (no documents when none were retrieved).

    The answer ends with the sentence that gives the answer, like every other method's.
    """

    async def generate_answer(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        return (await answer_once(parts, state, runtime.context))[1]

    return generate_answer


async def answer_once(parts: Parts, state: FlareState, ctx: FlareContext
                      ) -> tuple[Generation, Update]:
    """The one call of generate_answer and its state update; the generation too, for a node
    that reads its tokens (the uncertainty gates)."""
    step = state.get("step", {})
    docs = step.get("documents", [])
    gen = await generate_unit(parts, state, ctx, "segment", docs)
    spans = (await parts.splitter_for(ctx)).spans(gen.text)
    end = answer_end(gen.text, spans, complete=True)
    if end is not None:
        spans = [(s, e) for s, e in spans if s < end]
    spans = spans[: ctx.max_sentences]
    trace: list[StepTrace] = []
    for i, (s, e) in enumerate(spans):
        tokens = [(t.text, t.prob) for t in gen.tokens if s <= t.start < e]
        trace.append({
            "index": i, "draft": gen.text[s:e], "draft_tokens": tokens,
            "min_prob": min((p for _, p in tokens), default=None), "retrieved": False,
            "queries": list(step.get("queries", [])) if docs else [], "fallback": False,
            "doc_ids": [d.id or "" for d in docs],
            "doc_titles": [d.metadata.get("title", "") for d in docs],
            "sentence": gen.text[s:e],
        })
    answer = gen.text[: spans[-1][1]] if spans else gen.text
    kept = sum(1 for t in gen.tokens if t.start < len(answer))
    return gen, {"answer": answer, "answer_tokens": kept, "done": True, "trace": trace,
                 "step": {"new": True}, **lm_cost(gen)}
