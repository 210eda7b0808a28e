"""The nodes of REPLUG (Shi et al. 2023): documents with their weights, one look-ahead per
document (a LangGraph Send branch each), the ensemble of their next-token distributions
(Eq. 2), and the sentence-by-sentence acceptance the FLARE family uses too."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send

from activerag.errors import ActiveRagError
from activerag.nodes.base import Update, fresh_run
from activerag.nodes.exemplars import shots
from activerag.nodes.loop_logic import answer_end
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import answer_prompt
from activerag.nodes.replug.context import ReplugContext
from activerag.nodes.replug.logic import (
    doc_weights,
    mixture_logprob,
)
from activerag.nodes.replug.state import ReplugState, ReplugTrace
from activerag.nodes.replug.tokens import decide, fit_documents, proposal, stop_at
from activerag.nodes.studio_logic import add_sources
from activerag.serving.token_lm import TokenLM

log = logging.getLogger(__name__)


def weights_of(docs: Sequence[Document], retriever: str = "bm25",
               tau: float | None = None) -> list[float]:
    """λ(d, x) from the scores the store put on the documents (Eq. 2, see ReplugContext.tau):
    with no TAU, BM25 scores are divided by the top one and τ = 1."""
    scores = [float(d.metadata.get("score", 0.0)) for d in docs]
    if tau is None and retriever == "bm25" and scores and max(scores) > 0:
        top = max(scores)
        scores = [s / top for s in scores]
    return doc_weights(scores, tau or 1.0)


def begin(state: ReplugState, runtime: Runtime[ReplugContext]) -> Update:
    """Check the question and start a clean run (a second run on a thread inherits nothing)."""
    return fresh_run(state, answer_ids=[], text="", sentences=0, offsets=[], lows=[], exact=[],
                     answer="", answer_tokens=0, done=False, certified=0.0, cut_documents=[],
                     proposals=Overwrite([]), candidates=Overwrite([]))


def make_retrieve(parts: Parts) -> Any:
    """Node: the k documents for x with their weights, and each document's prompt P(d, x).

    Every REPLUG prompt holds one document, so exemplars (with exemplar retrieval on) carry
    their top-1 document each, as in the released code's demonstrations.
    """

    async def retrieve(state: ReplugState, runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        store = getattr(await parts.retriever_for(ctx), "store", None)
        if store is not None and len(store) < ctx.k:
            raise ActiveRagError(f"k={ctx.k} documents to ensemble, but the corpus holds only "
                                 f"{len(store)} passages; lower k or ingest more")
        docs = await parts.search(ctx, state["question"])
        if not docs:
            raise ActiveRagError(f"no passage of the corpus matches {state['question']!r}; "
                                 "REPLUG needs at least one document to ensemble")
        lm = await parts.token_lm_for(ctx)
        task = await shots(parts, ctx, per_exemplar=1)
        layout = await parts.layout_for(ctx, tokens=True)
        docs, prompts, cuts = await fit_documents(
            lm, docs, lambda d: answer_prompt(state["question"], "", [d], layout, task),
            ctx.max_answer_tokens)
        for note in cuts:
            log.warning("REPLUG: %s", note)
        return {"documents": docs, "weights": weights_of(docs, ctx.retriever, ctx.tau),
                # the token modes and rescore continue P(d, x) as token ids; vote sends text
                "prompts": prompts if ctx.ensemble != "vote" else [], "cut_documents": cuts,
                "retrievals": 1, "retrieval_steps": 1,
                "retrieved_titles": [d.metadata.get("title", "") for d in docs],
                "sources": add_sources([], docs)}

    return retrieve


def look_ahead(state: ReplugState, runtime: Runtime[ReplugContext]) -> list[Send]:
    """Edge: one `propose` branch per document, each continuing the shared answer."""
    ctx = runtime.context
    n = 1 if ctx.ensemble == "token" else ctx.lookahead
    n = max(1, min(n, ctx.max_answer_tokens - len(state.get("answer_ids", []))))
    return [Send("propose", {"doc": i, "prompt": [*prompt, *state.get("answer_ids", [])],
                             "n": n})
            for i, prompt in enumerate(state.get("prompts", []))]


def make_propose(parts: Parts) -> Any:
    """Node (a Send branch): document d's greedy look-ahead with its top-N at each position."""

    async def propose(branch: dict[str, Any], runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        lm = await parts.token_lm_for(ctx)
        steps = await lm.steps(branch["prompt"], branch["n"], ctx.top_logprobs)
        return {"proposals": [proposal(branch["doc"], steps)], "lm_calls": 1,
                "generated_tokens": len(steps.positions), "prompt_tokens": steps.prompt_tokens}

    return propose


async def ensemble_logprobs(lm: TokenLM, prompts: Sequence[Sequence[int]],
                            weights: Sequence[float], continuation: Sequence[int]) -> list[float]:
    """REPLUG's score mode: log p(y_t | x, y_<t) = log Σ_d λ_d p(y_t | d ∘ x, y_<t) for every
    token of CONTINUATION (Eq. 2 on a given text; each document's pass is one echo request)."""
    per_doc = await asyncio.gather(*[lm.score(p, continuation) for p in prompts])
    return [mixture_logprob(list(column), weights) for column in zip(*per_doc, strict=True)]


def make_ensemble(parts: Parts) -> Any:
    """Node: Eq. 2 over this round's look-aheads (decide_round), then the stops.

    The answer ends at an end-of-sequence token, a blank line or a new "Question:", the
    sentence that gives the answer, or max_answer_tokens.
    """

    async def ensemble(state: ReplugState, runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        lm = await parts.token_lm_for(ctx)
        proposals = sorted(state.get("proposals", []), key=lambda p: p["doc"])
        before = state.get("answer_ids", [])
        decided, decided_tokens, pieces, ended = await decide(lm, proposals, state["weights"],
                                                              before)
        n = len(decided_tokens)
        text, offsets = state.get("text", ""), list(state.get("offsets", []))
        for piece in pieces:
            offsets.append(len(text))
            text += piece
        ids, whole = [*before, *decided_tokens], len(text)
        stop = stop_at(text)
        if stop is not None:
            text, ended = text[:stop], True
        splitter = await parts.splitter_for(ctx)
        end = answer_end(text, splitter.spans(text), ended)
        if end is not None:
            text, ended = text[:end], True
        # uncut, the text keeps every token, one whose character is unfinished (no text yet)
        keep = len(ids) if len(text) == whole else sum(1 for o in offsets if o < len(text))
        done = ended or keep >= ctx.max_answer_tokens
        spans = splitter.spans(text)
        return {"answer_ids": ids[:keep], "text": text, "offsets": offsets[:keep],
                "sentences": len(spans) if done else max(0, len(spans) - 1),
                "lows": [*state.get("lows", []), *decided.low[:n]][:keep],
                "exact": [*state.get("exact", []), *decided.certified[:n]][:keep],
                "proposals": Overwrite([]), "done": done}

    return ensemble


def _trace(state: ReplugState, index: int, start: int, end: int) -> ReplugTrace:
    text, offsets = state.get("text", ""), state.get("offsets", [])
    idx = [i for i, o in enumerate(offsets) if start <= o < end]
    pieces = [text[offsets[i]:offsets[i + 1] if i + 1 < len(offsets) else len(text)]
              for i in idx]
    exact = [state.get("exact", [])[i] for i in idx]
    docs = state.get("documents", [])
    return {"index": index, "sentence": text[start:end].strip(),
            "tokens": [(p, state.get("lows", [])[i]) for p, i in zip(pieces, idx, strict=True)],
            "certified": sum(exact) / len(exact) if exact else 1.0,
            "doc_ids": [d.id or "" for d in docs],
            "doc_titles": [d.metadata.get("title", "") for d in docs],
            "weights": list(state.get("weights", []))}


def make_accept(parts: Parts) -> Any:
    """Node: trace the sentences that are complete (all of them once the answer is done)."""

    async def accept(state: ReplugState, runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        text = state.get("text", "")
        spans = (await parts.splitter_for(ctx)).spans(text)
        done = state.get("done", False)
        complete = spans if done else spans[:-1]
        traced = len(state.get("trace", []))
        entries = [_trace(state, i, s, e) for i, (s, e) in enumerate(complete) if i >= traced]
        writer = get_stream_writer()
        for entry in entries:
            writer({"sentence": entry})
        exact = state.get("exact", [])
        answer = text[: complete[-1][1]] if complete else ""
        return {"trace": entries, "answer": answer.strip() if done else answer,
                "answer_tokens": len(state.get("answer_ids", [])),
                "certified": sum(exact) / len(exact) if exact else 1.0}

    return accept


def route_after_ensemble(state: ReplugState,
                         runtime: Runtime[ReplugContext]) -> list[Send] | Literal["accept"]:
    """Trace once a sentence is complete or the answer is done; else look further ahead."""
    if state.get("done") or state.get("sentences", 0) > len(state.get("trace", [])):
        return "accept"
    return look_ahead(state, runtime)


def route_after_accept(state: ReplugState,
                       runtime: Runtime[ReplugContext]) -> list[Send] | Literal["__end__"]:
    """End once the answer is done; else look ahead again."""
    return "__end__" if state.get("done") else look_ahead(state, runtime)


def answer_branches(state: ReplugState, runtime: Runtime[ReplugContext]) -> list[Send]:
    """Edge (answer modes): one `answer_alone` branch per document."""
    return [Send("answer_alone", {"doc": i, "question": state["question"], "document": d})
            for i, d in enumerate(state.get("documents", []))]


def route_after_retrieve(state: ReplugState,
                         runtime: Runtime[ReplugContext]) -> list[Send]:
    """Token modes look ahead document by document; answer modes answer document by document."""
    if runtime.context.ensemble in ("vote", "rescore"):
        return answer_branches(state, runtime)
    return look_ahead(state, runtime)
