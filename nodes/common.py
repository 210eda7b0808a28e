"""Nodes every method shares: start, retrieve, accept a unit, and the unit generator.

Nodes that need the LM or the retriever are made by `make_*` factories over `Parts`, so a
graph can be built with given components or with ones made from the run's context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.errors import EmptyQuestion
from activerag.lm import CutFn, Generation
from activerag.nodes.logic import interleave
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import COT_EXEMPLARS, SELF_ASK_EXEMPLARS, Exemplar, answer_prompt
from activerag.state import FlareState, Step, StepTrace

Update = dict[str, Any]
Node = Callable[[FlareState, Runtime[FlareContext]], Awaitable[Update]]
PromptFn = Callable[..., str]
Unit = Literal["sentence", "window", "segment"]
RUNAWAY = 8


def exemplars(ctx: FlareContext, kind: Literal["cot", "self_ask"] = "cot") -> list[Exemplar]:
    """The few-shot exemplars of the run: the library's own or the paper's."""
    if ctx.prompt_set != "default":
        from activerag.paper import paper_exemplars

        if ctx.prompt_set == "paper":
            return paper_exemplars(kind)
        return paper_exemplars("strategyqa" if ctx.prompt_set == "paper-strategyqa" else "asqa")
    return COT_EXEMPLARS if kind == "cot" else SELF_ASK_EXEMPLARS


def begin(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Check the question, reset the answer, queue x as the first query (q_1 = x, §2.3)."""
    question = (state.get("question") or "").strip()
    if not question:
        raise EmptyQuestion("the question is empty; pass a non-empty 'question'")
    step: Step = {"queries": [question]} if runtime.context.initial_retrieval else {}
    return {"question": question, "answer": "", "answer_tokens": 0, "done": False,
            "step": {**step, "new": True}, "input_documents": []}


def route_after_begin(state: FlareState) -> Literal["retrieve_input", "next"]:
    """Retrieve with x first when the run asks for initial retrieval."""
    return "retrieve_input" if state.get("step", {}).get("queries") else "next"


def _titles(docs: Sequence[Document]) -> list[str]:
    return [d.metadata.get("title", "") for d in docs]


def make_retrieve_input(parts: Parts) -> Node:
    """Node: D_x, retrieved with the question x (§2.3: q_1 = x; Appendix A for FLARE)."""

    async def retrieve_input(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        docs = await parts.search(runtime.context, state["question"])
        return {"step": {"queries": [state["question"]], "documents": docs},
                "input_documents": docs, "retrievals": 1, "retrieved_titles": _titles(docs)}

    return retrieve_input


def make_retrieve(parts: Parts) -> Node:
    """Node: retrieve for each query of the step and interleave the rankings into the top k."""

    async def retrieve(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        queries = state.get("step", {}).get("queries", [])
        rankings = await asyncio.gather(*[parts.search(ctx, q) for q in queries])
        docs = interleave(rankings, ctx.k)
        return {"step": {"documents": docs}, "retrievals": len(queries),
                "retrieved_titles": _titles(docs)}

    return retrieve


def step_documents(state: FlareState, ctx: FlareContext) -> list[Document]:
    """This step's documents; with combine_retrieval, followed by D_x (Table 9)."""
    docs = list(state.get("step", {}).get("documents", []))
    if ctx.combine_retrieval:
        have = {d.id for d in docs}
        docs += [d for d in state.get("input_documents", []) if d.id not in have]
    return docs


async def generate_unit(parts: Parts, state: FlareState, ctx: FlareContext, unit: Unit,
                        docs: Sequence[Document], prompt: PromptFn = answer_prompt,
                        shots: Sequence[Exemplar] | None = None, **kwargs: Any) -> Generation:
    """The next unit after the answer so far.

    sentence: cut by Punkt (at most max_sentence_tokens); window: exactly window_tokens;
    segment: until a stop string or the answer's token budget.
    """
    lm = await parts.lm_for(ctx)
    left = max(1, ctx.max_answer_tokens - state.get("answer_tokens", 0))
    cut: CutFn | None = None
    budget = kwargs.pop("max_tokens", left)
    if unit == "sentence":
        cut = (await parts.splitter_for(ctx)).first_sentence_end
        budget = ctx.max_sentence_tokens
    elif unit == "window":
        budget = ctx.window_tokens
    text = prompt(state["question"], state.get("answer", ""), docs, ctx.prompt_format,
                  exemplars(ctx) if shots is None else shots)
    return await lm.generate(text, max_tokens=min(budget, left), cut=cut, **kwargs)


def lm_cost(*gens: Generation) -> Update:
    """The cost counters of some LM calls, as a state update."""
    return {"lm_calls": len(gens), "generated_tokens": sum(g.generated_tokens for g in gens),
            "prompt_tokens": sum(g.prompt_tokens for g in gens)}


def unit_update(gen: Generation, **extra: Any) -> Update:
    """The state update of a generated unit."""
    tokens = [(t.text, t.prob, t.start) for t in gen.tokens]
    return {"step": {"sentence": gen.text, "sentence_tokens": tokens,
                     "sentence_finished": gen.finished, **extra}, **lm_cost(gen)}


def make_generate(parts: Parts, unit: Unit = "sentence", prompt: PromptFn = answer_prompt) -> Node:
    """Node: the next unit, conditioned on this step's documents only (FLARE §2.3)."""

    async def generate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        docs = step_documents(state, ctx)
        gen = await generate_unit(parts, state, ctx, unit, docs, prompt)
        # the trace then names every document the unit saw, D_x included when combined
        return unit_update(gen, documents=docs)

    return generate


def _trace(state: FlareState, step: Step, text: str) -> StepTrace:
    gated = step.get("tokens") if "draft" in step else step.get("sentence_tokens", [])
    gated = gated or []
    docs = step.get("documents", [])
    return {
        "index": len(state.get("trace", [])),
        "draft": step.get("draft", text),
        "draft_tokens": [(t, p) for t, p, _ in gated],
        "min_prob": min((p for _, p, _ in gated), default=None),
        "retrieved": bool(step.get("fire")),
        "queries": list(step.get("queries", [])),
        "doc_ids": [d.id or "" for d in docs],
        "doc_titles": [d.metadata.get("title", "") for d in docs],
        "sentence": text.strip(),
    }


def make_accept(*, count_sentences: bool = True,
                carry: Callable[[Step], Step] | None = None) -> Callable[..., Update]:
    """Make the node that appends the decided unit (and its suffix) to the answer and traces it.

    count_sentences: stop at ctx.max_sentences units (windows count tokens only).
    carry: what of the step the next step starts with (emitted queries, kept documents).
    """

    def accept(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        suffix = step.get("suffix", "")
        if "sentence" in step:
            text, finished = step["sentence"], step.get("sentence_finished", False)
            n_tokens = len(step.get("sentence_tokens", []))
        else:
            text, finished = step.get("draft", ""), step.get("finished", False)
            n_tokens = len(step.get("tokens", []))
        trace = _trace(state, step, text)
        answer = state.get("answer", "") + text + suffix
        answer_tokens = state.get("answer_tokens", 0) + n_tokens
        stalled = not text.strip() and not step.get("emitted")
        # Backstop: units that keep nothing (a search removed from the text) add no answer
        # tokens, so the run also ends once it has generated RUNAWAY times the answer budget.
        runaway = state.get("generated_tokens", 0) >= RUNAWAY * ctx.max_answer_tokens
        done = (finished or stalled or runaway or answer_tokens >= ctx.max_answer_tokens
                or (count_sentences and trace["index"] + 1 >= ctx.max_sentences))
        get_stream_writer()({"sentence": trace})
        nxt = carry(step) if carry and not done else {}
        return {"answer": answer, "answer_tokens": answer_tokens, "done": done,
                "trace": [trace], "step": {**nxt, "new": True}}

    return accept


accept = make_accept()
accept_window = make_accept(count_sentences=False)


def route_after_accept(state: FlareState) -> Literal["next", "__end__"]:
    """Go on to the next unit until the answer is done."""
    return "__end__" if state.get("done") else "next"


def route_after_emitting(state: FlareState) -> Literal["retrieve", "next", "__end__"]:
    """Retrieve for the queries the last unit emitted, else go on until done."""
    if state.get("done"):
        return "__end__"
    return "retrieve" if state.get("step", {}).get("queries") else "next"
