"""The nodes of IRCoT (Trivedi et al. 2023, "Interleaving Retrieval with Chain-of-Thought
Reasoning for Knowledge-Intensive Multi-Step Questions", §3).

K paragraphs are retrieved with the question; then the reason step writes one chain-of-thought
sentence over every paragraph collected so far, and the retrieve step searches with that
sentence and adds what it finds to the collection (up to a cap), until a sentence says "answer
is" or the step cap; a reader then answers over the whole collection (§3.2, IRCoT QA).

Where this differs from the paper and the authors' code (StonyBrookNLP/ircot):
- paragraphs are told apart by their ids; the code also drops a paragraph whose title and text
  are each a 90% fuzzy match of one collected;
- the reason step keeps the first sentence as Punkt splits it (the code uses spaCy), and a
  sentence is "the answer" where the library finds one (`\\banswer is\\b`, the scoring rule);
  the code's regex asks for a space before it;
- every method here also ends at max_answer_tokens;
- the paragraphs are shown in the order they were collected (the code's shuffle is off).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, TypeAlias

from langchain_core.documents import Document
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from activerag.errors import PromptTooLong
from activerag.nodes.base import Node, Update, fresh_run, lm_cost
from activerag.nodes.decisions import retrieved
from activerag.nodes.ircot import logic as ircot_logic
from activerag.nodes.ircot.context import IRCoTContext
from activerag.nodes.ircot.prompts import IRCOT_STOPS, IRCOT_TASK, ircot_paper_task, ircot_prompt
from activerag.nodes.ircot.state import IRCoTState, IRCoTTrace
from activerag.nodes.loop import Unit, generate_unit, unit_update
from activerag.nodes.loop_logic import answer_end
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import Task
from activerag.serving.generation import Generation

IRCoTNode: TypeAlias = Node[IRCoTState, IRCoTContext]
"""A node of the IRCoT graph; `build_ircot_graph(reason=..., retrieve=...)` takes them."""


def task_for(ctx: IRCoTContext) -> Task:
    """The run's exemplars, at most ircot_shots: the library's own, the paper's, or none."""
    if ctx.prompt_set == "none":
        return replace(IRCOT_TASK, exemplars=())
    task = IRCOT_TASK if ctx.prompt_set == "default" else ircot_paper_task(
        ctx.ircot_exemplars, ctx.ircot_distractors)
    return replace(task, exemplars=task.exemplars[:ctx.ircot_shots])


def begin(state: IRCoTState, runtime: Runtime[IRCoTContext]) -> Update:
    """Check the question, start a clean run (nothing collected, every exemplar allowed) and
    queue the question as the first query (§3.1), unless initial_retrieval is off."""
    ctx = runtime.context
    update = fresh_run(state, answer="", answer_tokens=0, done=False, input_documents=[],
                       documents=[], paragraphs=[], shots=ctx.ircot_shots, sources=[])
    query = ircot_logic.question_query(update["question"], ctx.ircot_query)
    first = {"queries": [query]} if ctx.initial_retrieval else {}
    return {**update, "step": {**first, "new": True}}


def route_after_begin(state: IRCoTState) -> Literal["retrieve", "reason"]:
    """Retrieve with the question first when the run asks for initial retrieval."""
    return "retrieve" if state.get("step", {}).get("queries") else "reason"


def titles(docs: Sequence[Document]) -> list[str]:
    return [d.metadata.get("title", "") for d in docs]


def make_retrieve(parts: Parts) -> IRCoTNode:
    """Node: the top k paragraphs for the step's query, as `step.documents` (a replacement
    keeps that contract: what it puts there is what `collect` adds; a `step.rerank` it writes
    is traced)."""

    async def retrieve(state: IRCoTState, runtime: Runtime[IRCoTContext]) -> Update:
        queries = state.get("step", {}).get("queries", [])
        found = [await parts.search(runtime.context, q) for q in queries]
        docs = [d for ranking in found for d in ranking]
        return {"step": {"documents": docs}, "retrievals": len(queries), "retrieval_steps": 1,
                "retrieved_titles": titles(docs), **retrieved(state, queries, docs)}

    return retrieve


def collect(state: IRCoTState, runtime: Runtime[IRCoTContext]) -> Update:
    """Node: add the step's paragraphs to the collection, up to ircot_max_paragraphs (§3.1)."""
    step: dict[str, Any] = dict(state.get("step", {}))
    paragraphs, added, left_out = ircot_logic.collect(
        state.get("paragraphs", []), step.get("documents", []),
        runtime.context.ircot_max_paragraphs)
    return {"paragraphs": paragraphs, "documents": paragraphs,
            "step": {"added": added, "left_out": left_out}}


async def fitted(parts: Parts, state: IRCoTState, ctx: IRCoTContext, unit: Unit,
                 docs: Sequence[Document], shots: int) -> tuple[Generation, int]:
    """Generate UNIT over DOCS with the last SHOTS exemplars at most; while the server says
    the prompt does not fit, with one exemplar fewer, the first dropped (the authors' code).
    Returns the generation and the exemplars it was given."""
    task = task_for(ctx)
    n = min(shots, len(task.exemplars))
    while True:
        kept = replace(task, exemplars=task.exemplars[len(task.exemplars) - n:])
        try:
            gen = await generate_unit(parts, state, ctx, unit, docs, ircot_prompt, kept,
                                      stop=list(IRCOT_STOPS))
            return gen, n
        except PromptTooLong as exc:
            fewer = ircot_logic.fewer_shots(n)
            if fewer is None:
                raise PromptTooLong(
                    f"{exc} (IRCoT: {len(docs)} paragraphs and no exemplar left; lower "
                    "ircot_max_paragraphs or k)") from exc
            n = fewer


def make_reason(parts: Parts) -> IRCoTNode:
    """Node: the reason step, the next CoT sentence over the question, every paragraph
    collected and the chain so far (§3.1; only the first sentence generated is kept)."""

    async def reason(state: IRCoTState, runtime: Runtime[IRCoTContext]) -> Update:
        ctx = runtime.context
        docs = list(state.get("paragraphs", []))
        gen, shots = await fitted(parts, state, ctx, "sentence", docs,
                                  state.get("shots", ctx.ircot_shots))
        return {**unit_update(gen, seen=docs), "shots": shots}

    return reason


def trace_entry(index: int, role: str, text: str, tokens: Sequence[tuple[str, float, int]],
                step: dict[str, Any], docs: Sequence[Document],
                stop: str | None) -> IRCoTTrace:
    """One step of IRCoT's trace: the retrieval before it (query, paragraphs added, those left
    out), the paragraphs in its prompt, the text written and whether the loop stopped."""
    added = step.get("added", [])
    entry: IRCoTTrace = {
        "index": index, "draft": text.strip(), "draft_tokens": [(t, p) for t, p, _ in tokens],
        "min_prob": min((p for _, p, _ in tokens), default=None),
        "retrieved": bool(step.get("queries")), "queries": list(step.get("queries", [])),
        "fallback": False, "doc_ids": [d.id or "" for d in docs], "doc_titles": titles(docs),
        "sentence": text.strip(), "role": role, "new_ids": [d.id or "" for d in added],
        "new_titles": titles(added), "left_out": step.get("left_out", 0), "stop": stop,
    }
    if "rerank" in step:
        entry["rerank"] = step["rerank"]
    return entry


def accept(state: IRCoTState, runtime: Runtime[IRCoTContext]) -> Update:
    """Node: add the sentence to the chain and trace it; stop when it says "answer is" (or is
    empty, or a cap is reached), else make it the next query (§3.1)."""
    ctx = runtime.context
    step: dict[str, Any] = dict(state.get("step", {}))
    text, tokens = step.get("sentence", ""), step.get("sentence_tokens", [])
    chain = [t["sentence"] for t in state.get("trace", [])] + [text.strip()]
    answer_tokens = state.get("answer_tokens", 0) + len(tokens)
    cap = min(ctx.ircot_max_steps, ctx.max_sentences or ctx.ircot_max_steps)
    stop = ircot_logic.stop_reason(text, len(chain), cap, answer_tokens, ctx.max_answer_tokens)
    entry = trace_entry(len(chain) - 1, "reason", text, tokens, step,
                        step.get("seen", []), stop)
    get_stream_writer()({"sentence": entry})
    nxt = {} if stop else {
        "queries": [ircot_logic.next_query(chain, state["question"], ctx.ircot_query)]}
    return {"answer": state.get("answer", "") + text, "answer_tokens": answer_tokens,
            "done": stop is not None, "trace": [entry], "step": {**nxt, "new": True}}


def route_after_accept(state: IRCoTState) -> Literal["retrieve", "read"]:
    """Search with the sentence until the loop stops, then read."""
    return "read" if state.get("done") else "retrieve"


def make_read(parts: Parts) -> IRCoTNode:
    """Node: the reader (§3.2, IRCoT QA with CoT prompting): the whole chain of thought again,
    from scratch, over every collected paragraph; its text is the answer. With ircot_reader
    "none" the loop's own chain stands."""

    async def read(state: IRCoTState, runtime: Runtime[IRCoTContext]) -> Update:
        ctx = runtime.context
        if ctx.ircot_reader == "none":
            return {}
        docs = list(state.get("paragraphs", []))
        fresh: IRCoTState = {"question": state["question"], "answer": "", "answer_tokens": 0}
        gen, shots = await fitted(parts, fresh, ctx, "segment", docs,
                                  state.get("shots", ctx.ircot_shots))
        spans = (await parts.splitter_for(ctx)).spans(gen.text)
        end = answer_end(gen.text, spans, complete=True)
        text = gen.text if end is None else gen.text[:end]
        tokens = [(t.text, t.prob, t.start) for t in gen.tokens if t.start < len(text)]
        entry = trace_entry(len(state.get("trace", [])), "read", text, tokens, {}, docs, None)
        get_stream_writer()({"sentence": entry})
        return {"answer": text, "answer_tokens": len(tokens), "trace": [entry], "shots": shots,
                **lm_cost(gen)}

    return read
