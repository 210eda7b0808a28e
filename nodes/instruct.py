"""FLARE-instruct (§3.1, Appendix A): the LM asks for searches with "[Search(query)]"."""

from __future__ import annotations

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.lm import LM
from activerag.nodes.common import Node, Update, generate_unit, step_documents, unit_update
from activerag.nodes.logic import split_search
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import SEARCH_CLOSE, SEARCH_OPEN, instruct_prompt
from activerag.state import FlareState, Step

BAN = -100.0


async def bracket_ids(lm: LM) -> list[int]:
    """Ids of the tokens that open a search: "[" alone and after a space."""
    ids: list[int] = []
    for text in ("[", " ["):
        tokens = await lm.token_ids(text)
        if len(tokens) == 1 and tokens[0] not in ids:
            ids.append(tokens[0])
    return ids


def make_generate_with_search(parts: Parts) -> Node:
    """Node: generate until a search is asked for; only generated text is parsed for one.

    "[" gets +search_bias (Appendix A); right after a search the next search_ban_tokens tokens
    are generated with "[" forbidden.
    """

    async def generate_with_search(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        ids = await bracket_ids(await parts.lm_for(ctx))
        if step.get("ban_search"):
            kwargs = {"max_tokens": ctx.search_ban_tokens,
                      "logit_bias": {i: BAN for i in ids}}
        else:
            kwargs = {"stop": [SEARCH_CLOSE], "logit_bias": {i: ctx.search_bias for i in ids}}
        gen = await generate_unit(parts, state, ctx, "segment", step_documents(state, ctx),
                                  prompt=instruct_prompt, **kwargs)
        kept, query = split_search(gen.text, SEARCH_OPEN)
        if query is None and gen.stop_reason == SEARCH_CLOSE:
            kept += SEARCH_CLOSE
        update = unit_update(gen, emitted=[query] if query else [])
        update["step"]["sentence"] = kept
        update["step"]["sentence_tokens"] = [t for t in update["step"]["sentence_tokens"]
                                             if t[2] < len(kept)]
        if query:
            update["step"]["sentence_finished"] = False
        return update

    return generate_with_search


def carry_search(step: Step) -> Step:
    """Documents stay until the next search; a search retrieves and bans "[" for a while."""
    emitted = step.get("emitted", [])
    if emitted:
        return {"queries": emitted, "fire": True, "ban_search": True}
    return {"documents": step.get("documents", [])}
