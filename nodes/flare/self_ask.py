"""Question decomposition (self-ask, FLARE §4 and Prompt 3): each follow-up retrieves."""

from __future__ import annotations

from langgraph.runtime import Runtime

from activerag.answers import find_answer
from activerag.context import FlareContext
from activerag.nodes.base import Update
from activerag.nodes.exemplars import shots
from activerag.nodes.flare.logic import follow_up_at_end, last_follow_up
from activerag.nodes.loop import FlareNode, generate_unit, prompt_documents, unit_update
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import FINAL_ANSWER, FOLLOW_UP, INTERMEDIATE, self_ask_prompt
from activerag.state import FlareState, Step


def make_generate_segment(parts: Parts) -> FlareNode:
    """Node: generate until the model asks for an intermediate answer; emit its follow-up.

    Stopping at "Intermediate answer:" is a pause for retrieval, not the end of the answer;
    so is an output that ends on a follow-up question (a chat model often ends its turn there
    instead of writing "Intermediate answer:"). An output that ends with no final answer gets
    "So the final answer is:" appended and goes on once more, so that the model answers. Both
    are what the self-ask authors' code does; the step's `why` says when either happened.
    """

    async def generate_segment(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        docs = prompt_documents(state, ctx)
        gen = await generate_unit(parts, state, ctx, "segment", docs, prompt=self_ask_prompt,
                                  task=await shots(parts, ctx, "self_ask"), final_only=True,
                                  stop=[INTERMEDIATE])
        asked = gen.stop_reason == INTERMEDIATE
        follow_up = last_follow_up(gen.text, FOLLOW_UP) if asked else None
        suffix, why = (INTERMEDIATE if asked else ""), None
        if gen.finished and not asked:
            newline = "" if not gen.text or gen.text.endswith("\n") else "\n"
            follow_up = follow_up_at_end(gen.text, FOLLOW_UP)
            if follow_up:
                asked, suffix = True, newline + INTERMEDIATE
                why = "the model ended on a follow-up question: retrieving for it"
            elif find_answer(state.get("answer", "") + gen.text, final_only=True) is None:
                suffix = newline + FINAL_ANSWER
                why = f"the model ended without a final answer: {FINAL_ANSWER!r} appended"
        update = unit_update(gen, emitted=[follow_up] if follow_up else [], suffix=suffix,
                             seen=docs, **({"why": why} if why else {}))
        update["step"]["sentence_finished"] = gen.finished and not suffix
        return update

    return generate_segment


def carry_follow_up(step: Step) -> Step:
    """The next step retrieves with the follow-up question this one asked."""
    emitted = step.get("emitted", [])
    return {"queries": emitted, "fire": True} if emitted else {}
