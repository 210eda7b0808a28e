"""SeaKR-lite: a retrieve node that reranks its documents by the LM's own uncertainty.

After Yao et al. (2025), "SeaKR: Self-aware Knowledge Retrieval for Adaptive Retrieval
Augmented Generation", self-aware re-ranking: a retrieval fetches more snippets than it keeps;
the LM reads each one alone and writes the next step with it, and the snippets under which it
is least uncertain are kept. In the authors' code (THU-KEG/SeaKR, `MultiHopReasoner.rag`) BM25
returns 3 snippets, each is read beside the snippets already kept, the LM writes one reasoning
step (greedy, up to 100 tokens, stopped at the sentence) and 20 samples, and the 1 snippet
whose samples have the lowest eigen score (the Gram determinant of their hidden states) is
kept; an empty step ranks last, and a snippet kept before is skipped. As there, a pooled
document already in the prompt (D_x when combined, a paragraph IRCoT collected) is no
candidate here.

What differs here:
- the uncertainty is the mean token entropy of one greedy pseudo-generation of
  `rerank_tokens` tokens (each position's entropy over its top-20 alternatives, the mass they
  leave out one more outcome: `triggers.entropy`), not the hidden-state eigen score, which an
  OpenAI-compatible server cannot return. The issue quotes the paper's own ablation, in which
  an output entropy scores close to the hidden-state estimator (2Wiki F1 36.0 vs 37.8); the
  paper's length-normalised entropy is averaged over the 20 sampled generations (the code
  takes their mean perplexity), this one over the greedy tokens' top-20 distributions, with
  no sampling;
- the pseudo-generation is a fixed number of tokens, not the whole step;
- the k lowest are kept (the host method's k), from a pool of `rerank_pool` (default 3·k),
  not 1 of 3; the generations are sent at once, not one after another;
- the kept documents are the step's documents as the host method uses them (FLARE: they
  replace the last ones; IRCoT: they join the collected paragraphs); the host writes its next
  unit again over them, where the authors keep the best snippet's own step;
- when to retrieve is the host's (FLARE's gate, IRCoT's every sentence), not SeaKR's own
  uncertainty gate; FLARE's first retrieval, D_x, is not reranked (it comes before any draft),
  IRCoT's, with the question, is.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.errors import ActiveRagError, PromptTooLong
from activerag.nodes import loop
from activerag.nodes.base import Node, Update
from activerag.nodes.decisions import retrieved
from activerag.nodes.exemplars import shots
from activerag.nodes.ircot import steps as ircot
from activerag.nodes.ircot.context import IRCoTContext
from activerag.nodes.ircot.logic import fewer_shots
from activerag.nodes.ircot.prompts import ircot_prompt
from activerag.nodes.ircot.state import IRCoTState
from activerag.nodes.loop import FlareNode
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import answer_prompt
from activerag.nodes.seakr.context import SeakrContext
from activerag.nodes.seakr.logic import mean_entropy, pool_size, rerank
from activerag.serving.token_lm import Steps
from activerag.state import FlareState, RerankEntry

TOP = 20
"""Alternatives per position of a pseudo-generation (vLLM's default --max-logprobs)."""
Beside = Callable[[FlareState, FlareContext], list[Document]]
"""The documents each candidate is read beside in its pseudo-generation's prompt."""
Prompts = Callable[[Parts, FlareState, FlareContext, Sequence[Document]], Awaitable[list[str]]]
"""The host method's prompt for its next unit over the given documents, as the variants to
try in order, the next one when the server says a prompt does not fit its window."""


def question_documents(state: FlareState, ctx: FlareContext) -> list[Document]:
    """FLARE's: D_x when the run keeps the question's documents in every prompt
    (combine_retrieval), else none, since a retrieval replaces the documents (§2.3)."""
    return list(state.get("input_documents", [])) if ctx.combine_retrieval else []


def collected_paragraphs(state: FlareState, ctx: FlareContext) -> list[Document]:
    """IRCoT's: every paragraph collected so far (the authors' code likewise reads each
    snippet beside the snippets it kept before)."""
    return list(cast(IRCoTState, state).get("paragraphs", []))


def rerank_settings(ctx: FlareContext) -> tuple[int, int]:
    """The pool size and pseudo-generation tokens of CTX (SeakrContext's defaults for a
    context without them)."""
    pool = getattr(ctx, "rerank_pool", SeakrContext.rerank_pool)
    tokens = getattr(ctx, "rerank_tokens", SeakrContext.rerank_tokens)
    return pool_size(ctx.k, pool), tokens


async def flare_prompts(parts: Parts, state: FlareState, ctx: FlareContext,
                        docs: Sequence[Document]) -> list[str]:
    """FLARE's prompt for the regenerated sentence (the run's exemplars) over DOCS."""
    return [answer_prompt(state["question"], state.get("answer", ""), docs,
                          await parts.layout_for(ctx, tokens=True), await shots(parts, ctx))]


async def ircot_prompts(parts: Parts, state: FlareState, ctx: FlareContext,
                        docs: Sequence[Document]) -> list[str]:
    """IRCoT's reason-step prompt over DOCS: with the exemplars its last prompt fitted, then
    one fewer at a time, as its own reason step drops them (§3.1; the authors' code)."""
    if not isinstance(ctx, IRCoTContext):
        raise ActiveRagError("the IRCoT prompt needs an IRCoTContext; run ircot_seakr with one")
    task = ircot.task_for(ctx)
    n: int | None = min(cast(IRCoTState, state).get("shots", ctx.ircot_shots),
                        len(task.exemplars))
    texts = []
    layout = await parts.layout_for(ctx, tokens=True)
    while n is not None:
        kept = replace(task, exemplars=task.exemplars[len(task.exemplars) - n:])
        texts.append(ircot_prompt(state["question"], state.get("answer", ""), docs,
                                  layout, kept))
        n = fewer_shots(n)
    return texts


async def pseudo_generate(parts: Parts, state: FlareState, ctx: FlareContext,
                          docs: Sequence[Document], tokens: int,
                          prompts: Prompts = flare_prompts) -> Steps:
    """TOKENS greedy tokens of the next unit with DOCS in its prompt, TOP alternatives each
    (the first of the PROMPTS variants that fits the server's window)."""
    lm = await parts.token_lm_for(ctx)
    *fallbacks, last = await prompts(parts, state, ctx, docs)
    for text in fallbacks:
        try:
            return await lm.steps(await lm.tokenize(text), tokens, TOP)
        except PromptTooLong:
            continue
    return await lm.steps(await lm.tokenize(last), tokens, TOP)


def _key(doc: Document) -> str:
    return doc.id or doc.page_content


def _entries(pool: Sequence[Document], ranks: Sequence[int], gens: Sequence[Steps],
             entropies: Sequence[float | None], keep: list[int]) -> list[RerankEntry]:
    return [{"doc_id": d.id or "", "title": d.metadata.get("title", ""), "rank": ranks[i],
             "entropy": entropies[i], "tokens": len(gens[i].positions),
             "kept": keep.index(i) if i in keep else None} for i, d in enumerate(pool)]


def make_seakr_retrieve(parts: Parts, pool_retrieve: Node[Any, Any] | None = None,
                        beside: Beside = question_documents,
                        prompts: Prompts = flare_prompts) -> FlareNode:
    """Node: retrieve a pool with POOL_RETRIEVE (default FLARE's retrieve; any node that puts
    its documents in `step.documents`) at k = the pool size, pseudo-generate under each
    candidate (BESIDE's documents with it, in the host's PROMPTS), and keep the k whose
    pseudo-generations have the lowest mean token entropy, lowest first.

    A pooled document already among BESIDE's is no candidate (the authors' code skips the
    snippets it kept before). The step's `rerank` (and so the trace) holds every candidate's
    entropy and kept position; the pseudo-generations count as LM calls, and only the kept
    titles as retrieved ones.
    """
    host = pool_retrieve or loop.make_retrieve(parts)

    # Typed as a mapping, so that LangGraph hands it the host graph's whole state (a TypedDict
    # annotation would narrow it to FlareState's keys, and IRCoT's paragraphs would be lost).
    async def seakr_retrieve(whole: Mapping[str, Any], runtime: Runtime[FlareContext]) -> Update:
        state = cast(FlareState, whole)
        ctx = runtime.context
        size, tokens = rerank_settings(ctx)
        pooled = host(state, replace(runtime, context=replace(ctx, k=size)))
        update = dict(await pooled if inspect.isawaitable(pooled) else pooled)
        step = dict(update.get("step", {}))
        base = beside(state, ctx)
        present = {_key(d) for d in base}
        ranked = [(i, d) for i, d in enumerate(step.get("documents", []))
                  if _key(d) not in present]
        ranks, pool = [i for i, _ in ranked], [d for _, d in ranked]
        gens = await asyncio.gather(*[pseudo_generate(parts, state, ctx, [*base, d], tokens,
                                                      prompts) for d in pool])
        entropies = [mean_entropy([list(p.top.values()) for p in g.positions]) for g in gens]
        keep = rerank(entropies, ctx.k)
        kept = [pool[i] for i in keep]
        update["step"] = {**step, "documents": kept,
                          "rerank": _entries(pool, ranks, gens, entropies, keep)}
        if "documents" in update:
            update["documents"] = kept
        if "retrieved_titles" in update:
            update["retrieved_titles"] = [d.metadata.get("title", "") for d in kept]
        if "decision" in update:  # the sources and the decision name the kept documents
            shown = update["decision"]
            update.update(retrieved(state, shown["queries"], kept, shown["fallback"]))
        cost = {"lm_calls": len(gens), "generated_tokens": sum(len(g.positions) for g in gens),
                "prompt_tokens": sum(g.prompt_tokens for g in gens)}
        return {**update, **{key: update.get(key, 0) + n for key, n in cost.items()}}

    return seakr_retrieve
