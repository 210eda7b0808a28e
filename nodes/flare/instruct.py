"""FLARE-instruct (§3.1, Appendix A): the LM asks for searches with "[Search(query)]"."""

from __future__ import annotations

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.base import Update
from activerag.nodes.flare.logic import split_search
from activerag.nodes.loop import FlareNode, generate_unit, prompt_documents, unit_update
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import SEARCH_CLOSE, SEARCH_OPEN, instruct_prompt
from activerag.serving.lm import LM
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


def make_generate_with_search(parts: Parts) -> FlareNode:
    """Node: generate until a search is asked for; only generated text is parsed for one.

    "[" gets +search_bias (Appendix A); right after a search the next search_ban_tokens tokens
    are generated with "[" forbidden. A search is removed from the answer, an empty one too
    (it retrieves nothing but still bans "[" for a while).
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
        docs = prompt_documents(state, ctx)
        gen = await generate_unit(parts, state, ctx, "segment", docs, prompt=instruct_prompt,
                                  **kwargs)
        kept, query = split_search(gen.text, SEARCH_OPEN, SEARCH_CLOSE)
        update = unit_update(gen, emitted=[query] if query else [], seen=docs)
        unit = update["step"]
        unit["sentence"] = kept
        unit["sentence_tokens"] = [t for t in unit["sentence_tokens"] if t[2] < len(kept)]
        if query is not None:
            unit["searched"] = True
            unit["sentence_finished"] = False
        elif gen.stop_reason == SEARCH_CLOSE:
            unit["sentence_finished"] = False
        return update

    return generate_with_search


def carry_search(step: Step) -> Step:
    """Documents stay until the next search; a search retrieves and bans "[" for a while."""
    emitted = step.get("emitted", [])
    if emitted:
        return {"queries": emitted, "fire": True, "ban_search": True}
    if step.get("searched"):
        return {"documents": step.get("documents", []), "ban_search": True}
    return {"documents": step.get("documents", [])}
