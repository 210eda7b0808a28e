"""The LM, retriever and splitter a node uses: given to the builder, or made from the context."""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from activerag.context import ServingContext
from activerag.errors import LMServerUnreachable
from activerag.nodes.prompts import Layout
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM, VLLMClient
from activerag.serving.replicas import Replicas, urls
from activerag.serving.templates import layout_of
from activerag.serving.token_lm import TokenLM, VLLMTokens
from activerag.settings import Settings

_lock = threading.Lock()
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


_lms: dict[tuple[str, ...], LM] = {}
_lm_locks: dict[tuple[str, ...], threading.Lock] = {}
_corpora: dict[str, object] = {}
log = logging.getLogger(__name__)


def _corpus(store_dir: str):  # type: ignore[no-untyped-def]
    from activerag.stores.corpus import Corpus

    path = store_dir or str(Settings.from_env().stores)
    with _lock:
        if path not in _corpora:
            _corpora[path] = Corpus(Path(path), chroma_url=Settings.from_env().chroma_url)
        return _corpora[path]


def _key(base_url: str, model: str, cache_file: Path | None,
         top_logprobs: int) -> tuple[str, ...]:
    # the key of a client of the token's own logprob alone is the one it always was
    tail = (f"top{top_logprobs}",) if top_logprobs > 1 else ()
    return (base_url, model, str(cache_file), *tail)


def replicated(base_url: str, model: str, top_logprobs: int = 1) -> LM:
    """A client of BASE_URL; of several replicas when it names several (comma-separated): the
    model is asked of the first that answers, so a replica that is down does not stop a run."""
    endpoints = urls(base_url)
    if len(endpoints) == 1:
        return Replicas([VLLMClient(endpoints[0], model or None,  # type: ignore[return-value]
                                    top_logprobs=top_logprobs)])
    model = model or _served_model(endpoints)
    return Replicas([VLLMClient(url, model, top_logprobs=top_logprobs)  # type: ignore[return-value]
                     for url in endpoints])


def _served_model(endpoints: list[str]) -> str:
    """The model served by the first of ENDPOINTS that answers."""
    failures = []
    for url in endpoints:
        try:
            return VLLMClient(url).model
        except LMServerUnreachable as exc:
            failures.append(str(exc))
    raise LMServerUnreachable("no replica of base_url answers: " + " | ".join(failures))


def _lm(base_url: str, model: str, cache_file: Path | None, top_logprobs: int = 1) -> LM:
    """The one client per endpoint, model, cache and top logprobs per token; made by
    whichever caller comes first."""
    from activerag.serving import cache

    key = _key(base_url, model, cache_file, top_logprobs)
    with _lock:
        key_lock = _lm_locks.setdefault(key, threading.Lock())
    # A lock per key: asking one server for its model does not hold up clients of another.
    with key_lock:
        if key not in _lms:
            client: LM = replicated(base_url, model, top_logprobs)
            if cache_file is not None:
                client = cache.CachedLM(client, cache_file)  # type: ignore[arg-type]
            _lms[key] = client
        return _lms[key]


@dataclass
class Parts:
    """Components bound at build time; whatever is None is made from the run's context."""

    lm: LM | None = None
    retriever: BaseRetriever | None = None
    splitter: SentenceSplitter | None = None
    token_lm: TokenLM | None = None
    memo: dict[tuple[object, ...], object] = field(default_factory=dict, repr=False)
    """What the nodes derive once per corpus (the exemplars' documents), by their own keys."""

    # Making a component reads files or asks the server, so it runs off the event loop.

    async def lm_for(self, ctx: ServingContext) -> LM:
        """The given LM, or a cached vLLM client for the context's endpoint and model."""
        if self.lm is not None:
            return self.lm
        from activerag.nodes.triggers import top_logprobs_for
        from activerag.serving import cache

        cache_file = cache.active()
        top = top_logprobs_for(ctx)
        lm = _lms.get(_key(ctx.base_url, ctx.model, cache_file, top))
        if lm is None:
            lm = await asyncio.to_thread(_lm, ctx.base_url, ctx.model, cache_file, top)
        return lm

    async def token_lm_for(self, ctx: ServingContext) -> TokenLM:
        """The given token-level LM, or one for the context's endpoint (the served model)."""
        if self.token_lm is not None:
            return self.token_lm
        from activerag.serving import cache

        cache_file = cache.active()
        key = ("token_lm", ctx.base_url, ctx.model, cache_file)
        if key not in self.memo:
            model = (await self.lm_for(ctx)).model
            # token-level methods (REPLUG's ensemble, FB-RAG's reader) use the first replica
            lm: Any = VLLMTokens(urls(ctx.base_url)[0], model)
            if cache_file is not None:
                lm = cache.CachedTokenLM(lm, cache_file)
            self.memo.setdefault(key, lm)
        return self.memo[key]  # type: ignore[return-value]

    async def layout_for(self, ctx: ServingContext, fmt: str | None = None,
                         base_url: str | None = None, model: str | None = None,
                         tokens: bool = False) -> Layout:
        """The layout of the context's prompt_format (FMT: another of its formats): auto is the
        served model's own template, learned from the server at BASE_URL (default: the
        context's) serving MODEL (default: the LM's). Given an LM of its own (a scripted one;
        TOKENS: the token-level LM, for a prompt it reads) that carries no `chat_layout`, auto
        lays out ChatML and says so once."""
        fmt = fmt or ctx.prompt_format
        if fmt != "auto":
            return fmt  # type: ignore[return-value]
        given = self.token_lm if tokens else self.lm
        if given is not None and base_url is None:
            own = getattr(given, "chat_layout", None)
            if own is None:
                _warn_once("an LM given to the graph has no server to ask for its template: "
                           "prompt_format auto lays out ChatML")
            return own or "chatml"
        url = urls(base_url or ctx.base_url)[0]
        model = model or (await self.lm_for(ctx)).model
        return await layout_of(url, model) or "plain"

    async def retriever_for(self, ctx: ServingContext) -> BaseRetriever:
        """The given retriever, or one over the context's corpus and store."""
        if self.retriever is not None:
            return self.retriever
        corpus = await asyncio.to_thread(_corpus, ctx.store_dir)
        return await asyncio.to_thread(corpus.retriever, ctx.retriever, ctx.k,
                                       ctx.query_encoder)

    async def splitter_for(self, ctx: ServingContext) -> SentenceSplitter:
        """The given splitter, or Punkt trained on the context's corpus."""
        if self.splitter is not None:
            return self.splitter
        corpus = await asyncio.to_thread(_corpus, ctx.store_dir)
        return await asyncio.to_thread(corpus.splitter)

    async def search(self, ctx: ServingContext, query: str, k: int | None = None
                     ) -> list[Document]:
        """The top K (default ctx.k) documents for QUERY."""
        docs = await (await self.retriever_for(ctx)).ainvoke(query)
        return list(docs)[: k or ctx.k]
