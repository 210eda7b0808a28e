"""The nodes of REPLUG (Shi et al. 2023): documents with their weights, one look-ahead per
document (a LangGraph Send branch each), the ensemble of their next-token distributions
(Eq. 2), and the sentence-by-sentence acceptance the FLARE family uses too."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send

from activerag.answers import extract_answer, normalize
from activerag.context import FlareContext, ReplugContext
from activerag.errors import ActiveRagError
from activerag.nodes.base import Update, fresh_run, lm_cost
from activerag.nodes.flare import AnswerCut, make_generate, prompt_documents, shots, unit_update
from activerag.nodes.flare_logic import answer_end
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import ANSWER_STOPS, answer_prompt
from activerag.nodes.replug_logic import (
    best_answer,
    doc_weights,
    mixture_logprob,
    top_weighted,
    vote_scores,
)
from activerag.nodes.replug_tokens import decide, fit_documents, proposal, stop_at
from activerag.nodes.studio_logic import add_sources
from activerag.serving.lm import Generation, Token
from activerag.serving.token_lm import TokenLM
from activerag.state import FlareState, ReplugState, ReplugTrace

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
        layout = await parts.layout_for(ctx)
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


def make_answer_alone(parts: Parts) -> Any:
    """Node (a Send branch): document d's own greedy answer, y_d = LM(d ∘ x)."""

    async def answer_alone(branch: dict[str, Any], runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        lm = await parts.lm_for(ctx)
        task = await shots(parts, ctx, per_exemplar=1)
        prompt = answer_prompt(branch["question"], "", [branch["document"]],
                               await parts.layout_for(ctx),
                               task)
        gen = await lm.generate(prompt, max_tokens=ctx.max_answer_tokens, stop=[*ANSWER_STOPS],
                                cut=AnswerCut(await parts.splitter_for(ctx)))
        logprobs = [t.logprob for t in gen.tokens]
        # as generated: rescore scores it after the prompt (plain: with its leading space)
        return {"candidates": [{"doc": branch["doc"], "text": gen.text,
                                "tokens": len(gen.tokens),
                                "mean_logprob": sum(logprobs) / len(logprobs) if logprobs
                                else -math.inf}],
                **lm_cost(gen)}

    return answer_alone


def make_combine(parts: Parts) -> Any:
    """Node: the answer from the documents' own answers.

    vote (the released code): weight λ_d · exp(mean token log-probability) per answer, summed
    per normalised answer. rescore: Eq. 2 exactly on those candidates: every candidate text is
    scored under every document (echo) and mixed token by token; the best mean wins. An
    output with no answer is no candidate; when no output has one, the output of the
    highest-weighted document (the retriever's top one) is the answer.
    """

    async def combine(state: ReplugState, runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        found = sorted(state.get("candidates", []), key=lambda c: c["doc"])
        weights = state["weights"]
        answers = [extract_answer(c["text"]) for c in found]
        first: dict[str, int] = {}  # normalised answer -> its first output
        for i, answer in enumerate(answers):
            if answer:
                first.setdefault(normalize(answer), i)
        cost: Update = {}
        if ctx.ensemble == "vote":
            scores = vote_scores(answers, [weights[c["doc"]] for c in found],
                                 [c["mean_logprob"] for c in found])
        elif first:
            lm = await parts.token_lm_for(ctx)
            ids = await asyncio.gather(*[lm.tokenize(found[i]["text"]) for i in first.values()])
            mixed = await asyncio.gather(*[
                ensemble_logprobs(lm, state["prompts"], weights, y) for y in ids])
            scores = {key: sum(m) / len(m) if m else -math.inf
                      for key, m in zip(first, mixed, strict=True)}
            cost = {"lm_calls": len(ids) * len(state["prompts"]),
                    "prompt_tokens": sum(len(p) + len(y) for y in ids for p in state["prompts"])}
        else:
            scores = {}
        winner = best_answer(scores)
        chosen = found[first[winner] if winner is not None
                       else top_weighted([weights[c["doc"]] for c in found])]
        docs = state.get("documents", [])
        answer = chosen["text"].strip()
        entry: ReplugTrace = {
            "index": 0, "sentence": answer, "tokens": [], "certified": 1.0,
            "doc_ids": [d.id or "" for d in docs],
            "doc_titles": [d.metadata.get("title", "") for d in docs],
            "weights": list(weights),
            "candidates": sorted(((answers[first[k]], v) for k, v in scores.items()),
                                 key=lambda kv: -kv[1])}
        get_stream_writer()({"sentence": entry})
        return {"answer": answer, "answer_tokens": chosen["tokens"], "trace": [entry],
                "done": True, **cost}

    return combine


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
        layout = await parts.layout_for(ctx)
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
