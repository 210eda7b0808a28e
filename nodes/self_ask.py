"""Question decomposition (self-ask, FLARE §4 and Prompt 3): each follow-up retrieves."""

from __future__ import annotations

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.base import Update
from activerag.nodes.flare import FlareNode, generate_unit, prompt_documents, shots, unit_update
from activerag.nodes.flare_logic import last_follow_up
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import FOLLOW_UP, INTERMEDIATE, self_ask_prompt
from activerag.state import FlareState, Step


def make_generate_segment(parts: Parts) -> FlareNode:
    """Node: generate until the model asks for an intermediate answer; emit its follow-up.

    Stopping at "Intermediate answer:" is a pause for retrieval, not the end of the answer.
    """

    async def generate_segment(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        docs = prompt_documents(state, ctx)
        gen = await generate_unit(parts, state, ctx, "segment", docs, prompt=self_ask_prompt,
                                  task=await shots(parts, ctx, "self_ask"), final_only=True,
                                  stop=[INTERMEDIATE])
        asked = gen.stop_reason == INTERMEDIATE
        follow_up = last_follow_up(gen.text, FOLLOW_UP) if asked else None
        update = unit_update(gen, emitted=[follow_up] if follow_up else [],
                             suffix=INTERMEDIATE if asked else "", seen=docs)
        update["step"]["sentence_finished"] = gen.finished and not asked
        return update

    return generate_segment


def carry_follow_up(step: Step) -> Step:
    """The next step retrieves with the follow-up question this one asked."""
    emitted = step.get("emitted", [])
    return {"queries": emitted, "fire": True} if emitted else {}
