"""FB-RAG's nodes (Chawla et al. 2025) and its baselines' (LongBench long context, vanilla RAG,
OP-RAG, Self-Route), over one question's chunked context.

    prepare → recall_retrieve → sample → rerank → generate        (fb_rag)
    prepare → select (question's BM25, score or document order) → generate
    prepare → long_context                                         (the whole context)

Every node times itself into `stage_seconds` and streams a `stage` event; the LM calls add to
the same cost counters as the other method families.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from activerag.errors import ActiveRagError, LMServerUnreachable, PromptTooLong
from activerag.nodes.base import Update, checked_question
from activerag.nodes.fb_rag import logic as fb
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.fb_rag.logic import Chunk
from activerag.nodes.fb_rag.parts import FBParts, light_layout
from activerag.nodes.fb_rag.prompts import READ, READER_STOPS, SAMPLE, reader_prompt
from activerag.nodes.fb_rag.state import ChunkInfo, FBRagState
from activerag.nodes.studio_logic import add_sources
from activerag.serving.catalogue import FAST_MODEL
from activerag.serving.token_lm import (
    Sampler,
    Samples,
    TokenLM,
    context_window_of,
    cut_to_fit,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

def first_line(text: str) -> str:
    """The first non-empty line of TEXT, stripped."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _chunks(state: FBRagState) -> list[Chunk]:
    return [Chunk(c["index"], c["text"], c["start"], c["end"]) for c in state["chunk_list"]]


def _reading(chunks: list[Chunk], picked: list[int]) -> Update:
    """The update that names the chunks the reader reads, in its order, with their spans."""
    return {"selected": picked, "selected_spans": [(chunks[i].start, chunks[i].end)
                                                   for i in picked]}


def timed(name: str, body: Callable[..., Awaitable[Update]]) -> Callable[..., Awaitable[Update]]:
    """A node that runs BODY, adds its wall time to stage_seconds and streams the stage."""

    async def node(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
        start = time.perf_counter()
        update = await body(state, runtime)
        seconds = time.perf_counter() - start
        shown = {k: v for k, v in update.items() if k in (
            "recall", "samples", "selected", "answer", "route", "chunks", "truncated_tokens")}
        get_stream_writer()({"stage": {"name": name, "seconds": round(seconds, 4), **shown}})
        return {**update, "stage_seconds": {**update.get("stage_seconds", {}), name: seconds}}

    node.__name__ = name
    node.__qualname__ = body.__qualname__
    node.__doc__ = body.__doc__
    return node


SPECIAL_TOKENS = 4
"""Room left for what the server adds to a text prompt (Gemma's <bos>): tokenize counts
without them."""


async def fit(lm: TokenLM, prompt: str, reserve: int, who: str) -> tuple[str, int]:
    """PROMPT cut in the middle, as LongBench does, to leave RESERVE tokens of LM's context
    window for the output; the prompt and how many tokens were cut (0: it fit)."""
    window = await context_window_of(lm)
    if not window:
        return prompt, 0
    room = window - reserve - SPECIAL_TOKENS
    ids = await lm.tokenize(prompt)
    if len(ids) <= room:
        return prompt, 0
    if room < 2:
        raise PromptTooLong(f"the {who}'s {window}-token context window leaves no room for a "
                            f"prompt after {reserve} output tokens; serve it with a larger "
                            "--max-model-len or lower the token budgets")

    async def middle(limit: int) -> str:
        return await lm.detokenize(fb.truncate_middle(ids, limit)[0])

    fitted = await cut_to_fit(lm, middle, room, room)
    if fitted is None:
        raise PromptTooLong(f"the prompt could not be cut to fit the {who}'s {window}-token "
                            "window")
    text, _, kept = fitted
    dropped = len(ids) - kept
    log.warning("FB-RAG: the %s's prompt (%d tokens) was cut in the middle by %d tokens to fit "
                "its %d-token window", who, len(ids), dropped, window)
    return text, dropped


async def named(call: Awaitable[T], who: str, url: str) -> T:
    """CALL, with an unreachable server named by its role (FB-RAG talks to two)."""
    try:
        return await call
    except LMServerUnreachable as exc:
        light = who == "light sampler"
        start = f"activerag serve --model {FAST_MODEL.key}" if light else "activerag serve"
        where = ("light_base_url (--light-url)" if light else "base_url (--strong-url)")
        raise LMServerUnreachable(
            f"FB-RAG's {who} at {url} does not answer ({str(exc).split(';')[0]}); start it with "
            f"`{start}`, or set {where} to a running server's URL") from exc


# ---------------------------------------------------------------------------------------------
# Nodes


def make_prepare(parts: FBParts) -> Callable[..., Awaitable[Update]]:
    async def prepare(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
        """Chunk the question's own context, or (none given) build one from the store: the
        question's best passages up to recall_words words, one chunk each."""
        ctx = runtime.context
        question = checked_question(state.get("question"))
        context = state.get("context")
        if context is not None and not context.strip():
            raise ActiveRagError("the context holds no words; pass the question's context, or "
                                 "leave it out to retrieve one from the store")
        extra: Update = {"sources": []}
        if context:
            chunks = (fb.chunk_words(context, ctx.chunk_words) if ctx.chunking == "words"
                      else fb.chunk_paragraphs(context))
        else:
            docs = await parts.strong.search(ctx, question, ctx.k)
            if not docs:
                raise ActiveRagError("the question has no context and the store found nothing "
                                     "for it; pass a context or ingest a corpus")
            texts = [f"{d.metadata.get('title', '')}\n{d.page_content}".strip() for d in docs]
            context = "\n\n".join(texts)
            chunks = fb.chunk_paragraphs(context)
            extra = {"retrievals": 1,
                     "retrieved_titles": [d.metadata.get("title", "") for d in docs],
                     "sources": add_sources([], docs)}
        if not chunks:
            raise ActiveRagError("the context holds no words; pass the question's context")
        words = chunks[-1].end
        if ctx.read_words >= words and state.get("context"):
            raise ActiveRagError(
                f"read_words (Y = {ctx.read_words}) is not below the context's {words} words: "
                "the reader would read all of it; lower read_words, or use long_context")
        return {"context": context, "chunks": len(chunks),
                "chunk_list": [ChunkInfo(index=c.index, start=c.start, end=c.end, text=c.text)
                               for c in chunks],
                "question_scores": fb.bm25_scores(chunks, [question])[0],
                "truncated_tokens": 0, "lm_calls": 0, "generated_tokens": 0,
                "prompt_tokens": 0, **extra}

    return timed("prepare", prepare)


async def _recall_retrieve(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
    """Stage I: the chunks of the question's best BM25 scores, up to recall_words words (X)."""
    chunks = _chunks(state)
    picked = fb.within_budget(fb.ranking(state["question_scores"]), chunks,
                              runtime.context.recall_words)
    return {"recall": sorted(picked)}


recall_retrieve = timed("recall_retrieve", _recall_retrieve)


def make_sample(parts: FBParts) -> Callable[..., Awaitable[Update]]:
    async def sample(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
        """Stage II: the light LM reads the question and the stage I chunks (in the context's
        order) and writes K rationales with answers."""
        ctx = runtime.context
        prompt = reader_prompt(state["question"],
                               fb.join_chunks(_chunks(state), state["recall"]),
                               await light_layout(parts, ctx), SAMPLE)
        out, cut = await named(draw(parts, ctx, prompt), "light sampler", ctx.light_base_url)
        if len(out.texts) != ctx.samples:
            raise ActiveRagError(f"the light LM returned {len(out.texts)} samples, not "
                                 f"{ctx.samples}; does its server honour n?")
        drawn = {} if out.drawn_seconds is None else {
            "stage_seconds": {"sample_drawn": out.drawn_seconds}}
        return {"samples": out.texts, "lm_calls": out.requests,
                "prompt_tokens": out.prompt_tokens, "generated_tokens": out.generated_tokens,
                "truncated_tokens": cut, **drawn}

    return timed("sample", sample)


async def draw(parts: FBParts, ctx: FBRagContext, prompt: str) -> tuple[Samples, int]:
    """The light LM's K samples of PROMPT (cut in the middle if it must be), and the tokens cut."""
    light: Sampler = await parts.light_for(ctx)
    prompt, cut = await fit(light, prompt, ctx.sample_tokens, "light LM")  # type: ignore[arg-type]
    out = await light.sample(prompt, ctx.samples, ctx.sample_tokens, temperature=ctx.temperature,
                             top_p=ctx.top_p, top_k=ctx.top_k, seed=ctx.seed,
                             separate=ctx.separate_requests)
    return out, cut


async def _rerank(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
    """Every chunk of the context (not only stage I's) scored by BM25 with each sample's raw
    text as the query; the forward score is the max over samples (Eq. 5), mixed with the
    question's own score by η (Eq. 6); the best up to read_words words (Y) are kept."""
    ctx = runtime.context
    chunks = _chunks(state)
    forward = fb.forward_scores(fb.bm25_scores(chunks, state["samples"]))
    scores = fb.combine(state["question_scores"], forward, ctx.eta_b, ctx.eta_f, ctx.scale)
    picked = sorted(fb.within_budget(fb.ranking(scores), chunks, ctx.read_words))
    return {"scores": scores, **_reading(chunks, picked)}


rerank = timed("rerank", _rerank)


def make_select(order: Literal["original", "score"]) -> Callable[..., Awaitable[Update]]:
    async def select(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
        """The question's best BM25 chunks up to read_words words (Y), in the context's order
        (OP-RAG) or best first (vanilla RAG)."""
        chunks = _chunks(state)
        picked = fb.within_budget(fb.ranking(state["question_scores"]), chunks,
                                  runtime.context.read_words)
        if order == "original":
            picked = sorted(picked)
        return {"scores": state["question_scores"], **_reading(chunks, picked)}

    return timed("select", select)


async def read(parts: FBParts, ctx: FBRagContext, question: str, passages: str,
               instruction: str = READ) -> Update:
    """The strong LM's answer from PASSAGES, the prompt cut in the middle if it must be."""
    return await named(_read(parts, ctx, question, passages, instruction), "strong reader",
                       ctx.base_url)


async def _read(parts: FBParts, ctx: FBRagContext, question: str, passages: str,
                instruction: str) -> Update:
    lm = await parts.strong.lm_for(ctx)
    tokens = await parts.strong.token_lm_for(ctx)
    prompt, cut = await fit(tokens, reader_prompt(question, passages,
                                                  await parts.strong.layout_for(ctx),
                                                  instruction),
                            ctx.max_answer_tokens, "strong LM")
    gen = await lm.generate(prompt, max_tokens=ctx.max_answer_tokens, stop=READER_STOPS)
    return {"answer": first_line(gen.text), "lm_calls": 1, "prompt_tokens": gen.prompt_tokens,
            "generated_tokens": gen.generated_tokens, "truncated_tokens": cut}


def make_generate(parts: FBParts, route: str,
                  instruction: str = READ) -> Callable[..., Awaitable[Update]]:
    async def generate(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
        """The strong LM answers from the selected chunks, in the order selected."""
        passages = fb.join_chunks(_chunks(state), state["selected"], "score")
        return {**await read(parts, runtime.context, state["question"], passages,
                             instruction), "route": route}

    return timed("generate", generate)


def make_long_context(parts: FBParts) -> Callable[..., Awaitable[Update]]:
    async def long_context(state: FBRagState, runtime: Runtime[FBRagContext]) -> Update:
        """The strong LM reads the whole context (LongBench: cut in the middle to fit)."""
        chunks = _chunks(state)
        return {**await read(parts, runtime.context, state["question"], state["context"]),
                "route": "long_context", **_reading(chunks, list(range(len(chunks))))}

    return timed("long_context", long_context)


def route_self(state: FBRagState) -> str:
    """Self-Route: a declined answer goes to the long-context reader."""
    return "long_context" if fb.unanswerable(state.get("answer", "")) else "__end__"
