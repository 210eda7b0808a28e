"""The sentence loop every graph of the FLARE family shares (Jiang et al. 2023, §3): start a
run, retrieve (with the question first, then each step's queries), generate the next unit
(sentence, window or segment) over this step's documents, and accept it into the answer; over
the run's task and exemplars (nodes/exemplars.py). FLARE-direct's own steps (draft, gate,
query formulation) are in nodes/flare/steps.py, the other members' beside it in nodes/flare/.

Nodes that need the LM or the retriever are made by `make_*` factories over `Parts`, so a
graph can be built with given components or with ones made from the run's context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

from langchain_core.documents import Document
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from activerag.answers import find_answer
from activerag.context import FlareContext
from activerag.nodes.base import Node, Update, fresh_run, lm_cost, node_name, streaming_tokens
from activerag.nodes.decisions import retrieved, written
from activerag.nodes.exemplars import shots
from activerag.nodes.loop_logic import answer_end, interleave
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import (
    ANSWER_STOPS,
    Task,
    answer_prompt,
)
from activerag.sentences import SentenceSplitter
from activerag.serving.generation import Generation
from activerag.serving.lm import CutFn, text_sink
from activerag.state import COUNTERS, Decision, FlareState, Step, StepTrace

FlareNode: TypeAlias = Node[FlareState, FlareContext]
PromptFn = Callable[..., str]
Unit = Literal["sentence", "window", "segment"]
RUNAWAY = 8


def begin(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Check the question, start a clean run, queue x as the first query (q_1 = x, §2.3).

    Counters and the trace are overwritten, not added to, so a second run on the same thread
    (Studio, a checkpointer) does not inherit the first one's.
    """
    update = fresh_run(state, answer="", answer_tokens=0, done=False, input_documents=[],
                       documents=[], sources=[])
    step: Step = {"queries": [update["question"]]} if runtime.context.initial_retrieval else {}
    decision: Decision = {"node": "begin", "question": update["question"],
                          "retrieve_first": bool(step), "reset": RESET}
    return {**update, "step": {**step, "new": True}, "decision": decision}


RESET = ["answer", "trace", "retrieved_titles", "sources", *COUNTERS]
"""What `begin` starts from empty or zero (its update writes these as {"value": ..., "type":
"__overwrite__"} where the state adds to them)."""


def route_after_begin(state: FlareState) -> Literal["retrieve_input", "next"]:
    """Retrieve with x first when the run asks for initial retrieval."""
    return "retrieve_input" if state.get("step", {}).get("queries") else "next"


def _titles(docs: Sequence[Document]) -> list[str]:
    return [d.metadata.get("title", "") for d in docs]


def make_retrieve_input(parts: Parts) -> FlareNode:
    """Node: D_x, retrieved with the question x (§2.3: q_1 = x; Appendix A for FLARE)."""

    async def retrieve_input(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        docs = await parts.search(runtime.context, state["question"])
        return {"step": {"queries": [state["question"]], "documents": docs},
                "input_documents": docs, "documents": docs, "retrievals": 1,
                "retrieval_steps": 1, "retrieved_titles": _titles(docs),
                **retrieved(state, [state["question"]], docs, node="retrieve_input")}

    return retrieve_input


def make_retrieve(parts: Parts) -> FlareNode:
    """Node: retrieve for each query of the step and interleave the rankings into the top k.

    A query that finds nothing (a masked draft whose words match no passage) is replaced by
    the question x, and the step says so (`fallback`).
    """

    async def retrieve(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        queries = step.get("queries", [])
        rankings = list(await asyncio.gather(*[parts.search(ctx, q) for q in queries]))
        calls = len(queries)
        fallback = bool(step.get("fallback"))
        if not all(rankings):
            fallback = True
            calls += 1
            by_question = await parts.search(ctx, state["question"])
            rankings = [r or by_question for r in rankings] or [by_question]
        docs = interleave(rankings, ctx.k)
        return {"step": {"documents": docs, "fallback": fallback}, "documents": docs,
                "retrievals": calls, "retrieval_steps": 1, "retrieved_titles": _titles(docs),
                **retrieved(state, queries, docs, fallback)}

    return retrieve


def prompt_documents(state: FlareState, ctx: FlareContext) -> list[Document]:
    """The documents in the next prompt: this step's retrieval if it had one, else (with
    keep_documents, §2.3) the last retrieved ones; with combine_retrieval, D_x after them."""
    step = state.get("step", {})
    if "documents" in step:
        docs = list(step["documents"])
    else:
        docs = list(state.get("documents", [])) if ctx.keep_documents else []
    if ctx.combine_retrieval:
        have = {d.id or d.page_content for d in docs}
        docs += [d for d in state.get("input_documents", [])
                 if (d.id or d.page_content) not in have]
    return docs


class AnswerCut:
    """A CutFn: stop a generation once the sentence that gives the answer is complete.

    final_only: only "final answer is" ends it (self-ask, whose intermediate answers may say
    "the answer is").
    """

    def __init__(self, splitter: SentenceSplitter, final_only: bool = False) -> None:
        self.splitter = splitter
        self.final_only = final_only
        self.fingerprint = f"answer-end{'-final' if final_only else ''}:{splitter.fingerprint}"
        """Identifies the cut (the LM cache keys requests by it)."""

    def __call__(self, text: str, final: bool) -> int | None:
        if find_answer(text, self.final_only) is None:
            return None
        return answer_end(text, self.splitter.spans(text), final, self.final_only)



async def generate_unit(parts: Parts, state: FlareState, ctx: FlareContext, unit: Unit,
                        docs: Sequence[Document], prompt: PromptFn = answer_prompt,
                        task: Task | None = None, final_only: bool = False,
                        **kwargs: Any) -> Generation:
    """The next unit after the answer so far; every unit stops at a blank line or a new
    "Question:" (the authors stop on a blank line).

    sentence: cut by Punkt (at most max_sentence_tokens); window: exactly window_tokens;
    segment: until a stop string, the answer sentence (with FINAL_ONLY, "final answer is"
    only) or the answer's token budget.
    """
    lm = await parts.lm_for(ctx)
    left = max(1, ctx.max_answer_tokens - state.get("answer_tokens", 0))
    budget = kwargs.pop("max_tokens", left)
    stop = [*ANSWER_STOPS, *kwargs.pop("stop", [])]
    cut: CutFn | None = None
    if unit == "sentence":
        cut = (await parts.splitter_for(ctx)).first_sentence_end
        budget = ctx.max_sentence_tokens
    elif unit == "window":
        budget = ctx.window_tokens
    else:
        cut = AnswerCut(await parts.splitter_for(ctx), final_only)
    task = task or await shots(parts, ctx)
    text = prompt(state["question"], state.get("answer", ""), docs,
                  await parts.layout_for(ctx), task)
    with streaming_tokens():
        return await lm.generate(text, max_tokens=min(budget, left), cut=cut, stop=stop,
                                 **kwargs)


def unit_update(gen: Generation, **extra: Any) -> Update:
    """The state update of a generated unit."""
    tokens = [(t.text, t.prob, t.start) for t in gen.tokens]
    return {"step": {"sentence": gen.text, "sentence_tokens": tokens,
                     "sentence_finished": gen.finished, "sentence_complete": gen.complete,
                     **extra}, **lm_cost(gen)}


def same_documents(a: Sequence[Document], b: Sequence[Document]) -> bool:
    """A and B are the same documents in the same order, as a prompt shows them."""
    def shown(docs: Sequence[Document]) -> list[tuple[object, ...]]:
        return [(d.id, d.metadata.get("title", ""), d.page_content) for d in docs]

    return shown(a) == shown(b)


def redraft(state: FlareState, docs: Sequence[Document]) -> Update | None:
    """The step's draft as the regenerated unit, when the retrieval brought back exactly the
    documents it was written with: the regeneration's prompt would be the draft's own, and a
    greedy LM writes the same text again (a cached run returns the draft's entry for it). None
    when the documents differ or the step has no draft."""
    step = state.get("step", {})
    if "draft" not in step or not same_documents(step.get("seen", []), docs):
        return None
    tokens = step.get("tokens", [])
    with streaming_tokens():  # sent once, as an LM's cache hit sends its text
        if (sink := text_sink.get()) is not None and step["draft"]:
            sink(step["draft"])
    return {"step": {"sentence": step["draft"], "sentence_tokens": tokens,
                     "sentence_finished": step.get("finished", False),
                     "sentence_complete": step.get("complete", False), "seen": docs,
                     "redrafted": True},
            "decision": {"node": node_name() or "regenerate", "text": step["draft"],
                         "min_prob": min((p for _, p, _ in tokens), default=None),
                         "redrafted": "the retrieval returned the draft's own documents: its "
                                      "prompt is the draft's, so the draft is kept unasked"}}


def make_generate(parts: Parts, unit: Unit = "sentence",
                  prompt: PromptFn = answer_prompt, reuse_draft: bool = False) -> FlareNode:
    """Node: the next unit, conditioned on this step's documents (or the kept ones, §2.3).

    REUSE_DRAFT (FLARE's regeneration, whose prompt is the draft's with the new documents):
    when the documents are the draft's own, the draft is the unit (`redraft`), and no request
    is made."""

    async def generate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        docs = prompt_documents(state, ctx)
        if reuse_draft and (same := redraft(state, docs)) is not None:
            return same
        gen = await generate_unit(parts, state, ctx, unit, docs, prompt)
        # the trace then names every document the unit saw, D_x included when combined
        return {**unit_update(gen, seen=docs), "decision": written(gen)}

    return generate


def _trace(state: FlareState, step: Step, text: str) -> StepTrace:
    gated = step.get("tokens") if "draft" in step else step.get("sentence_tokens", [])
    gated = gated or []
    docs = step.get("seen", step.get("documents", []))
    trace: StepTrace = {
        "index": len(state.get("trace", [])),
        "draft": step.get("draft", text),
        "draft_tokens": [(t, p) for t, p, _ in gated],
        "min_prob": min((p for _, p, _ in gated), default=None),
        "retrieved": bool(step.get("fire")),
        "queries": list(step.get("queries", [])),
        "fallback": bool(step.get("fallback")),
        "doc_ids": [d.id or "" for d in docs],
        "doc_titles": [d.metadata.get("title", "") for d in docs],
        "sentence": text.strip(),
    }
    if "rerank" in step:
        trace["rerank"] = step["rerank"]
    if "why" in step:
        trace["why"] = step["why"]
    if step.get("redrafted"):
        trace["redrafted"] = True
    return trace


def make_accept(parts: Parts, *, count_sentences: bool = True, final_only: bool = False,
                carry: Callable[[Step], Step] | None = None) -> FlareNode:
    """Make the node that appends the decided unit (and its suffix) to the answer and traces it.

    The answer ends with the sentence that gives the answer ("So the answer is ..."), at the
    model's end of output, or at the caps (max_answer_tokens, max_sentences).
    count_sentences: max_sentences counts these units (windows count tokens only).
    final_only: only "final answer is" ends the answer (self-ask).
    carry: what of the step the next step starts with (emitted queries, kept documents).
    """

    async def accept(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        suffix = step.get("suffix", "")
        if "sentence" in step:
            text, finished = step["sentence"], step.get("sentence_finished", False)
            complete = finished or step.get("sentence_complete", False)
            tokens = step.get("sentence_tokens", [])
        else:
            text, finished = step.get("draft", ""), step.get("finished", False)
            complete = finished or step.get("complete", False)
            tokens = step.get("tokens", [])
        before = state.get("answer", "")
        answer = before + text
        answered = False
        if find_answer(answer, final_only) is not None and not step.get("searched"):
            splitter = await parts.splitter_for(ctx)
            # a unit whose budget ran out may end inside the answer sentence (windows)
            end = answer_end(answer, splitter.spans(answer), complete, final_only)
            if end is not None:
                answered = True
                text = answer[len(before):max(end, len(before))]
                tokens = [t for t in tokens if t[2] < len(text)]
                answer, suffix = before + text, ""
                if "draft" not in step:
                    step = {**step, "sentence_tokens": tokens}
        trace = _trace(state, step, text)
        answer += suffix
        answer_tokens = state.get("answer_tokens", 0) + len(tokens)
        stalled = not text.strip() and not step.get("emitted") and not step.get("searched")
        # Backstop: units that keep nothing (a search removed from the text) add no answer
        # tokens, so the run also ends once it has generated RUNAWAY times the answer budget.
        runaway = state.get("generated_tokens", 0) >= RUNAWAY * ctx.max_answer_tokens
        capped = (count_sentences and ctx.max_sentences is not None
                  and trace["index"] + 1 >= ctx.max_sentences)
        done = (answered or finished or stalled or runaway or capped
                or answer_tokens >= ctx.max_answer_tokens)
        get_stream_writer()({"sentence": trace})
        nxt = carry(step) if carry and not done else {}
        ended = next((why for why, hit in (
            ("answered", answered), ("model ended", finished), ("nothing written", stalled),
            ("runaway", runaway), ("max_sentences", capped),
            ("max_answer_tokens", answer_tokens >= ctx.max_answer_tokens)) if hit), None)
        decision: Decision = {"node": node_name() or "accept", "index": trace["index"],
                              "sentence": trace["sentence"], "done": done, "ended": ended}
        return {"answer": answer, "answer_tokens": answer_tokens, "done": done,
                "trace": [trace], "step": {**nxt, "new": True}, "decision": decision}

    return accept


def route_after_accept(state: FlareState) -> Literal["next", "__end__"]:
    """Go on to the next unit until the answer is done."""
    return "__end__" if state.get("done") else "next"


def route_after_emitting(state: FlareState) -> Literal["retrieve", "next", "__end__"]:
    """Retrieve for the queries the last unit emitted, else go on until done."""
    if state.get("done"):
        return "__end__"
    return "retrieve" if state.get("step", {}).get("queries") else "next"
