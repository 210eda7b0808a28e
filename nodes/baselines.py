"""Nodes of the single-pass baselines: the whole answer in one LM call (FLARE §2.2, §6)."""

from __future__ import annotations

from activerag.nodes.flare import Node, Update
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import answer_prompt
from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.state import FlareState, StepTrace


def make_generate(parts: Parts) -> Node:
    """Node: y = LM([D_x, x]) in one call (no documents when none were retrieved)."""

    async def generate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        docs = step.get("documents", [])
        prompt = answer_prompt(state["question"], "", docs, ctx.prompt_format)
        lm, splitter = await parts.lm_for(ctx), await parts.splitter_for(ctx)
        gen = await lm.generate(prompt, max_tokens=ctx.max_answer_tokens)
        spans = splitter.spans(gen.text)[: ctx.max_sentences]
        trace: list[StepTrace] = []
        for i, (s, e) in enumerate(spans):
            tokens = [(t.text, t.prob) for t in gen.tokens if s <= t.start < e]
            trace.append({
                "index": i, "draft": gen.text[s:e], "draft_tokens": tokens,
                "min_prob": min((p for _, p in tokens), default=None), "retrieved": False,
                "queries": list(step.get("queries", [])) if docs else [],
                "doc_ids": [d.id or "" for d in docs],
                "doc_titles": [d.metadata.get("title", "") for d in docs],
                "sentence": gen.text[s:e],
            })
        answer = gen.text[: spans[-1][1]] if spans else gen.text
        return {"answer": answer, "answer_tokens": len(gen.tokens), "done": True,
                "trace": trace, "step": {}, "lm_calls": 1,
                "generated_tokens": gen.generated_tokens}

    return generate
