"""The LM seen by every node: text plus per-token log-probabilities, trimmed to the text kept.

The client is LangChain's OpenAI completion model (`langchain_openai.OpenAI`) pointed at vLLM's
OpenAI-compatible server. `langchain_community.llms.VLLMOpenAI` returns the same logprobs but
warns on import that langchain-community is being sunset, and it adds nothing we use.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import openai
from langchain_openai import OpenAI
from pydantic import SecretStr

from activerag.errors import ModelMismatch
from activerag.moved import moved_names
from activerag.serving.dialect import LLAMA_CPP, VLLM, engine_of, first_stop, tokenize_body
from activerag.serving.generation import (
    Generation,
    ServerTimes,
    Token,
    _tokens_of,
    check_alternatives,
    trim,
)
from activerag.serving.lm_errors import (
    translate,
)
from activerag.serving.security import api_key, auth_headers
from activerag.serving.slots import book_for, naming, slot_count
from activerag.serving.slots import forget as forget_slots
from activerag.settings import lm_timeout

__getattr__ = moved_names(__name__, {
    "LMServerError": "activerag.serving.lm_errors",
    "busy_error": "activerag.serving.lm_errors",
    "too_long_error": "activerag.serving.lm_errors",
    "unreachable_error": "activerag.serving.lm_errors",
})
"""Names whose home moved: from here with a DeprecationWarning that names it."""

# Returns where the text should be cut (a character offset) or None to keep generating;
# `final` says that generation has ended and whatever is there must be judged now.
CutFn = Callable[[str, bool], int | None]

text_sink: ContextVar[Callable[[str], None] | None] = ContextVar("activerag_text_sink",
                                                                 default=None)
"""Where a generation's text goes while it streams, piece by piece (a node sets it to stream
the tokens to its caller; nodes/base.py `streaming_tokens`). A piece waits for the next, so
that the look-ahead past a cut (the next sentence's first token, which the cut needs to see) is
not sent. An LM that does not stream (a cache hit) sends its whole kept text once."""


class LM(Protocol):
    """Anything that generates text with token logprobs; VLLMClient and the tests' ScriptedLM."""

    model: str

    async def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        cut: CutFn | None = None,
        stop: list[str] | None = None,
        logit_bias: dict[int, float] | None = None,
    ) -> Generation: ...

    async def token_ids(self, text: str) -> list[int]:
        """Token ids of TEXT in the model's vocabulary (for logit biases)."""
        ...


@dataclass
class _Streamed:
    """What a completion's stream has given so far (VLLMClient._stream)."""

    sink: Callable[[str], None] | None
    text: str = ""
    tokens: list[Token] = field(default_factory=list)
    end: int | None = None
    finish: str | None = None
    stop_reason: str | None = None
    sent: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: Any = None


class VLLMClient:
    """A vLLM OpenAI-compatible completion endpoint that returns token logprobs."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        timeout: float | None = None,
        top_logprobs: int = 1,
        name_slots: bool | None = None,
    ) -> None:
        """TOP_LOGPROBS alternatives per token (1: the token's own logprob; 0: none asked, for
        a server without logprobs and a method that reads none: its tokens come back empty).
        NAME_SLOTS: send llama-server's requests to slots by name where that is safe (None,
        serving/slots.py), always (True: to test a server) or never (False)."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout or lm_timeout()
        self.top_logprobs = top_logprobs
        self.name_slots = name_slots
        self.model = model or self._served_model()
        self._llms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, OpenAI] = (
            weakref.WeakKeyDictionary()
        )
        self._engine: str | None = None
        self._slots: int | None = None

    async def engine(self) -> str:
        """Which server this is (dialect.VLLM or LLAMA_CPP), asked once; of llama-server, also
        how many slots it has (serving/slots.py)."""
        if self._engine is None:
            try:
                async with httpx.AsyncClient(timeout=self.timeout, headers=auth_headers()) as h:
                    resp = await h.get(f"{self.base_url}/models")
                    resp.raise_for_status()
                    engine = engine_of(resp.json().get("data", []))
                    if engine == LLAMA_CPP and naming(self.base_url, self.name_slots):
                        self._slots = await slot_count(h, self.base_url)
                    self._engine = engine
            except (httpx.HTTPError, ValueError, AttributeError):
                return VLLM  # not listed now: the request itself then says what is wrong
        return self._engine

    @property
    def names_slots(self) -> bool:
        """Whether this client sends its requests to slots by name (known once `engine` ran)."""
        return bool(self._slots)

    def _llm(self) -> OpenAI:
        """The LangChain model for the running event loop (its HTTP pool is bound to one loop)."""
        loop = asyncio.get_running_loop()
        if loop not in self._llms:
            # llama-server closes the connection after a stream, and every generation streams:
            # a kept connection would carry the next request into a closed socket
            fresh = httpx.AsyncClient(timeout=self.timeout, limits=httpx.Limits(
                max_keepalive_connections=0)) if self._engine == LLAMA_CPP else None
            self._llms[loop] = OpenAI(base_url=self.base_url, model=self.model,
                                      api_key=SecretStr(api_key() or "EMPTY"), temperature=0.0,
                                      max_retries=0, timeout=self.timeout,
                                      http_async_client=fresh)
        return self._llms[loop]

    def _served_model(self) -> str:
        from activerag.serving.running import server_models

        models = server_models(self.base_url)
        if not models:
            raise ModelMismatch(f"the server at {self.base_url} serves no model")
        return models[0]

    def check(self) -> None:
        """Fail now, with a clear error, if the server is down or serves another model."""
        from activerag.serving.running import server_models

        models = server_models(self.base_url)
        if self.model not in models:
            raise ModelMismatch(
                f"the server at {self.base_url} serves {models}, not {self.model!r}; "
                "pass one of those as the model, or omit it"
            )

    async def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        cut: CutFn | None = None,
        stop: list[str] | None = None,
        logit_bias: dict[int, float] | None = None,
    ) -> Generation:
        """Stream a greedy completion; stop paying as soon as CUT says where the text ends."""
        params, client_stops = await self._params(prompt, max_tokens, stop, logit_bias)
        got = _Streamed(sink=text_sink.get())
        try:
            if self._slots:
                with book_for(self.base_url, self._slots).request(prompt) as (slot, written):
                    if slot is not None:
                        params["extra_body"] = {**params.get("extra_body", {}), "id_slot": slot}
                    try:
                        await self._stream(params, cut, client_stops, got)
                    finally:
                        written.append(got.text)
            else:
                await self._stream(params, cut, client_stops, got)
        except (openai.OpenAIError, httpx.HTTPError) as exc:
            if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
                # the server went away: the one that answers next on this URL (restarted) may
                # be the other engine, which takes other requests and connections
                self._engine, self._slots = None, None
                self._llms.clear()
                forget_slots(self.base_url)
            raise translate(exc, self.base_url, self.model, self.timeout) from exc
        text, tokens, end = got.text, got.tokens, got.end
        check_alternatives(tokens, self.top_logprobs, self.base_url)
        # llama-server gives a character split over tokens one logprob entry: its usage counts
        # every token generated
        generated = (max(len(tokens), got.completion_tokens) if self.top_logprobs
                     else got.completion_tokens)
        cut_early = end is not None
        if end is None and cut is not None:
            end = cut(text, True)
        if end is None:
            end = len(text)
        if got.sink is not None and end > got.sent:
            got.sink(text[got.sent:end])
        # "stop" is an end of sequence or a stop string; a cut before the end keeps it going.
        finished = got.finish == "stop" and end >= len(text.rstrip())
        kept_text, kept = trim(text, tokens, end)
        server = ServerTimes.of(got.timings)
        # llama-server sends usage on the last chunk only, which a stream closed at a cut
        # never reads; its timings on every chunk count the prompt too
        prompt_tokens = got.prompt_tokens or (server.cached + server.prefilled if server else 0)
        return Generation(kept_text, kept, finished, generated, got.stop_reason,
                          prompt_tokens, prompt, complete=finished or cut_early, server=server)

    async def _params(self, prompt: str, max_tokens: int, stop: list[str] | None,
                      logit_bias: dict[int, float] | None) -> tuple[dict[str, Any], list[str]]:
        """The request's body, and the stop strings this client must find itself."""
        params: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "logprobs": self.top_logprobs,
            "stream": True,
            # usage on every chunk, so that a stream closed early still reports its prompt size
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if not self.top_logprobs:
            del params["logprobs"]
        # The client cuts the text at the first stop string on both engines. llama-server is sent
        # none, as it does not say which one ended a stream. vLLM ends the stream at one itself,
        # but without it in the text it holds back a stop string's length of text at every token
        # (about 2 tokens late at each sentence cut); with it, each token streams as decoded.
        client_stops = list(stop or ())
        # asked first whatever the stops: the engine also decides how connections are kept
        if await self.engine() == LLAMA_CPP:
            # the server's prefill and decode times on every chunk (a stream closed at a cut
            # never sees the last one's), for the cost accounting (ServerTimes)
            params["extra_body"] = {"timings_per_token": True}
        elif stop:
            params["stop"] = stop
            params["extra_body"] = {"include_stop_str_in_output": True}
        if logit_bias:
            params["logit_bias"] = {str(k): v for k, v in logit_bias.items()}
        return params, client_stops

    async def _stream(self, params: dict[str, Any], cut: CutFn | None, client_stops: list[str],
                      got: _Streamed) -> None:
        """Read the stream into GOT until it ends, a client-side stop string or CUT ends it."""
        # LangChain's astream cannot be closed early without leaking the HTTP stream, so the
        # sentence-bounded call streams through the model's own configured client; closing it
        # makes vLLM abort the request, so no token past the cut is paid for.
        stream = await self._llm().async_client.create(**params)
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    got.prompt_tokens = chunk.usage.prompt_tokens
                    got.completion_tokens = chunk.usage.completion_tokens
                got.timings = (chunk.model_extra or {}).get("timings", got.timings)
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                if got.sink is not None and len(got.text) > got.sent:
                    got.sink(got.text[got.sent:])
                    got.sent = len(got.text)
                info = {"logprobs": choice.logprobs and choice.logprobs.model_dump(),
                        "finish_reason": choice.finish_reason}
                got.tokens.extend(_tokens_of(choice.text, info, len(got.text), self.base_url,
                                             self.top_logprobs))
                got.finish = choice.finish_reason or got.finish
                reason = (choice.model_extra or {}).get("stop_reason")
                got.stop_reason = reason if isinstance(reason, str) else got.stop_reason
                got.text += choice.text
                hit = first_stop(got.text, client_stops) if client_stops else None
                if hit is not None:
                    got.text, got.stop_reason, got.finish = got.text[:hit[0]], hit[1], "stop"
                    return
                if cut is not None and got.finish is None:
                    got.end = cut(got.text, False)
                    if got.end is not None:
                        return

    async def token_ids(self, text: str) -> list[int]:
        """Token ids of TEXT, from vLLM's /tokenize endpoint."""
        url = self.base_url.removesuffix("/v1") + "/tokenize"
        body = tokenize_body(await self.engine(), text)
        try:
            async with httpx.AsyncClient(timeout=self.timeout,
                                         headers=auth_headers()) as http:
                resp = await http.post(url, json={"model": self.model, **body})
                resp.raise_for_status()
        except httpx.HTTPError as exc:
            raise translate(exc, self.base_url, self.model, self.timeout) from exc
        return list(resp.json()["tokens"])

