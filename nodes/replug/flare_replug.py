"""flare_replug's regeneration: FLARE's sentence written again over its documents with REPLUG's
ensemble of their next-token distributions (Eq. 2), a few tokens at a time."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.base import Update
from activerag.nodes.exemplars import shots
from activerag.nodes.loop import make_generate, prompt_documents, unit_update
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import answer_prompt
from activerag.nodes.replug.steps import weights_of
from activerag.nodes.replug.tokens import decide, fit_documents, proposal, stop_at
from activerag.serving.generation import Generation, Token
from activerag.state import FlareState

log = logging.getLogger(__name__)


def make_ensemble_sentence(parts: Parts, lookahead: int = 8, top: int = 20) -> Any:
    """Node for the FLARE family: regenerate the sentence with REPLUG's ensemble over this
    step's documents (each prompt holds one of them), in place of one pass over all of them.

    FLARE's gate decides when to retrieve; the documents then vote token by token (agree
    rounds, as the `replug` graph decides them) until Punkt sees the sentence end.
    """

    async def regenerate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        docs = prompt_documents(state, ctx)
        if not docs:  # nothing to ensemble: one pass without documents
            return await make_generate(parts, "sentence")(state, runtime)
        lm = await parts.token_lm_for(ctx)
        task = await shots(parts, ctx, per_exemplar=1)
        budget = min(ctx.max_sentence_tokens,
                     ctx.max_answer_tokens - state.get("answer_tokens", 0))
        layout = await parts.layout_for(ctx, tokens=True)
        docs, prompts, cuts = await fit_documents(
            lm, docs, lambda d: answer_prompt(state["question"], state.get("answer", ""), [d],
                                              layout, task), max(1, budget))
        for note in cuts:
            log.warning("FLARE+REPLUG: %s", note)
        weights = weights_of(docs, ctx.retriever)
        splitter = await parts.splitter_for(ctx)
        ids: list[int] = []
        tokens: list[Token] = []
        text, ended, calls, generated, sent = "", False, 0, 0, 0
        end: int | None = None
        while not ended and len(ids) < max(1, budget) and end is None:
            n = max(1, min(lookahead, budget - len(ids)))
            steps = await asyncio.gather(*[lm.steps([*p, *ids], n, top) for p in prompts])
            calls, generated = calls + len(steps), generated + sum(len(s.positions)
                                                                   for s in steps)
            sent += sum(s.prompt_tokens for s in steps)
            decided, new, pieces, ended = await decide(
                lm, [proposal(i, s) for i, s in enumerate(steps)], weights, ids)
            for piece, low in zip(pieces, decided.low, strict=False):
                tokens.append(Token(piece, math.log(max(low, 1e-12)), len(text)))
                text += piece
            ids += new
            stop = stop_at(text)
            if stop is not None:
                text, ended = text[:stop], True
            end = splitter.first_sentence_end(text, ended or len(ids) >= budget)
        end = len(text) if end is None else end
        kept = [t for t in tokens if t.start < end]
        gen = Generation(text[:end], kept, ended and end >= len(text.rstrip()), generated,
                         prompt_tokens=sent, complete=True)
        return {**unit_update(gen, seen=docs), "lm_calls": calls}

    return regenerate
