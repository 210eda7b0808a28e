"""The LM seen by every node: text plus per-token log-probabilities, trimmed to the text kept.

The client is LangChain's OpenAI completion model (`langchain_openai.OpenAI`) pointed at vLLM's
OpenAI-compatible server. `langchain_community.llms.VLLMOpenAI` returns the same logprobs but
warns on import that langchain-community is being sunset, and it adds nothing we use.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import openai
from langchain_openai import OpenAI
from pydantic import SecretStr

from activerag.errors import (
    ActiveRagError,
    LMServerUnreachable,
    ModelMismatch,
    NoLogprobs,
    PromptTooLong,
)
from activerag.serving.dialect import (
    LLAMA_CPP,
    VLLM,
    completion_logprobs,
    engine_of,
    first_stop,
    tokenize_body,
)
from activerag.serving.security import api_key, auth_headers, unauthorized_error
from activerag.settings import lm_timeout

# Returns where the text should be cut (a character offset) or None to keep generating;
# `final` says that generation has ended and whatever is there must be judged now.
CutFn = Callable[[str, bool], int | None]

text_sink: ContextVar[Callable[[str], None] | None] = ContextVar("activerag_text_sink",
                                                                 default=None)
"""Where a generation's text goes while it streams, piece by piece (a node sets it to stream
the tokens to its caller; nodes/base.py `streaming_tokens`). A piece waits for the next, so
that the look-ahead past a cut (the next sentence's first token, which the cut needs to see) is
not sent. An LM that does not stream (a cache hit) sends its whole kept text once."""


class LMServerError(ActiveRagError):
    """The server failed a request with a 5xx answer; a retry may succeed."""


@dataclass(frozen=True)
class Token:
    """One generated token: its text, natural-log probability and start offset in the text."""

    text: str
    logprob: float
    start: int
    top: tuple[float, ...] = ()
    """Natural-log probabilities of the server's top alternatives at this position, when the
    client asked for more than one (a trigger that reads entropy needs them)."""

    @property
    def prob(self) -> float:
        """Probability of the token, exp(logprob)."""
        return math.exp(self.logprob)


@dataclass
class Generation:
    """What one LM call produced, after trimming."""

    text: str
    tokens: list[Token]
    finished: bool
    """The output ended right after the kept text: an end of sequence, or the stop string
    named by stop_reason (callers that stop to act, like self-ask, check which)."""
    generated_tokens: int = 0
    """Tokens the server generated for this call, including any cut away."""
    stop_reason: str | None = None
    """The stop string that ended generation, if one did."""
    prompt_tokens: int = 0
    """Tokens in the prompt, as the server counted them."""
    prompt: str = field(default="", repr=False)
    complete: bool = False
    """The kept text ends where its unit ends: the model stopped there, or the cut saw the
    unit end while the stream went on. False when the token budget ran out first."""


def trim(text: str, tokens: Sequence[Token], end: int) -> tuple[str, list[Token]]:
    """Cut TEXT at END and keep the tokens that start before it."""
    return text[:end], [t for t in tokens if t.start < end]


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


def busy_error(base_url: str, timeout: float) -> LMServerError:
    """A request that timed out on a server that accepted it: busy, not unreachable."""
    return LMServerError(f"the LM server at {base_url} did not answer within {timeout:g} s "
                         "(it is busy or stuck); lower --concurrency, or give requests longer "
                         "with ACTIVERAG_LM_TIMEOUT=SECONDS")


def unreachable_error(base_url: str, cause: str) -> LMServerUnreachable:
    """A request refused, reset, or cut off by a server dying midway; CAUSE says how."""
    return LMServerUnreachable(f"the LM server at {base_url} is unreachable ({cause}); start it "
                               "with `activerag serve` or pass the URL of a running vLLM server")


def too_long_error(model: str, message: str) -> PromptTooLong | None:
    """The error for a rejection that says the prompt overflows the context window, else None.
    A prompt that fills the window exactly leaves no room for one token: vLLM then cuts the
    request's max_tokens to 0 and refuses that ("max_tokens must be at least 1, got 0").
    llama-server shares its -c among its --parallel slots, and says so per slot."""
    if "context size" in message:
        return PromptTooLong(
            f"the prompt does not fit a llama-server slot of {model!r}: {message}. Each of its "
            "slots holds -c / -np tokens: serve it with a larger --max-model-len (activerag "
            "serve --engine llama.cpp gives each slot that many) or fewer --parallel slots "
            "(by hand: raise -c or lower -np), or retrieve fewer or shorter documents")
    if "context length" in message or "maximum" in message and "token" in message or \
            "max_tokens must be at least 1" in message:
        return PromptTooLong(
            f"the prompt does not fit the context window of {model!r}: {message}. "
            "Retrieve fewer or shorter documents (lower k), lower max tokens, or serve the "
            "model with a larger --max-model-len"
        )
    return None


def _translate(exc: Exception, base_url: str, model: str,
               timeout: float | None = None) -> ActiveRagError:
    """Turn an OpenAI client error into one that names the cause and the fix."""
    if isinstance(exc, openai.APITimeoutError | httpx.ReadTimeout | httpx.WriteTimeout):
        return busy_error(base_url, timeout or lm_timeout())
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return unreachable_error(base_url, str(exc))
    if isinstance(exc, openai.AuthenticationError) or (
            isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 401):
        return unauthorized_error(base_url)
    if isinstance(exc, openai.NotFoundError):
        return ModelMismatch(
            f"the server at {base_url} does not serve model {model!r} ({exc}); "
            "pass the name listed by GET /v1/models, or omit it to use the served one"
        )
    if isinstance(exc, openai.BadRequestError):
        msg = str(exc)
        if "logprobs" in msg:
            return NoLogprobs(f"the server at {base_url} refused the logprobs asked for ({msg}); "
                              "start vLLM with a larger --max-logprobs, or choose a trigger "
                              "that reads only each token's own probability")
        return too_long_error(model, msg) or ActiveRagError(
            f"the LM server rejected the request: {msg}")
    if isinstance(exc, openai.InternalServerError | openai.APITimeoutError):
        return LMServerError(f"the LM server at {base_url} failed: {exc}; retrying may help")
    return ActiveRagError(f"LM request to {base_url} failed: {exc!r}")


class VLLMClient:
    """A vLLM OpenAI-compatible completion endpoint that returns token logprobs."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        timeout: float | None = None,
        top_logprobs: int = 1,
    ) -> None:
        """TOP_LOGPROBS alternatives per token (1: the token's own logprob; 0: none asked, for
        a server without logprobs and a method that reads none: its tokens come back empty)."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout or lm_timeout()
        self.top_logprobs = top_logprobs
        self.model = model or self._served_model()
        self._llms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, OpenAI] = (
            weakref.WeakKeyDictionary()
        )
        self._engine: str | None = None

    async def engine(self) -> str:
        """Which server this is (dialect.VLLM or LLAMA_CPP), asked once."""
        if self._engine is None:
            try:
                async with httpx.AsyncClient(timeout=self.timeout, headers=auth_headers()) as h:
                    resp = await h.get(f"{self.base_url}/models")
                    resp.raise_for_status()
                    self._engine = engine_of(resp.json().get("data", []))
            except (httpx.HTTPError, ValueError, AttributeError):
                return VLLM  # not listed now: the request itself then says what is wrong
        return self._engine

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
        from activerag.serving.server import server_models

        models = server_models(self.base_url)
        if not models:
            raise ModelMismatch(f"the server at {self.base_url} serves no model")
        return models[0]

    def check(self) -> None:
        """Fail now, with a clear error, if the server is down or serves another model."""
        from activerag.serving.server import server_models

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
        # llama-server does not say which stop string ended a stream: its stops are found here
        client_stops = list(stop or ()) if await self.engine() == LLAMA_CPP else []
        if stop and not client_stops:
            params["stop"] = stop
        if logit_bias:
            params["logit_bias"] = {str(k): v for k, v in logit_bias.items()}
        text = ""
        tokens: list[Token] = []
        end: int | None = None
        finish: str | None = None
        stop_reason: str | None = None
        sink, sent = text_sink.get(), 0
        prompt_tokens = 0
        completion_tokens = 0
        try:
            # LangChain's astream cannot be closed early without leaking the HTTP stream, so
            # the sentence-bounded call streams through the model's own configured client;
            # closing it makes vLLM abort the request, so no token past the cut is paid for.
            stream = await self._llm().async_client.create(**params)
            async with stream:
                async for chunk in stream:
                    if chunk.usage is not None:
                        prompt_tokens = chunk.usage.prompt_tokens
                        completion_tokens = chunk.usage.completion_tokens
                    if not chunk.choices:
                        continue
                    choice = chunk.choices[0]
                    if sink is not None and len(text) > sent:
                        sink(text[sent:])
                        sent = len(text)
                    info = {"logprobs": choice.logprobs and choice.logprobs.model_dump(),
                            "finish_reason": choice.finish_reason}
                    tokens.extend(_tokens_of(choice.text, info, len(text), self.base_url,
                                             self.top_logprobs))
                    finish = choice.finish_reason or finish
                    reason = (choice.model_extra or {}).get("stop_reason")
                    stop_reason = reason if isinstance(reason, str) else stop_reason
                    text += choice.text
                    hit = first_stop(text, client_stops) if client_stops else None
                    if hit is not None:
                        text, stop_reason, finish = text[:hit[0]], hit[1], "stop"
                        break
                    if cut is not None and finish is None:
                        end = cut(text, False)
                        if end is not None:
                            break
        except (openai.OpenAIError, httpx.HTTPError) as exc:
            raise _translate(exc, self.base_url, self.model, self.timeout) from exc
        check_alternatives(tokens, self.top_logprobs, self.base_url)
        generated = len(tokens) if self.top_logprobs else completion_tokens
        cut_early = end is not None
        if end is None and cut is not None:
            end = cut(text, True)
        if end is None:
            end = len(text)
        if sink is not None and end > sent:
            sink(text[sent:end])
        # "stop" is an end of sequence or a stop string; a cut before the end keeps it going.
        finished = finish == "stop" and end >= len(text.rstrip())
        kept_text, kept = trim(text, tokens, end)
        return Generation(kept_text, kept, finished, generated, stop_reason, prompt_tokens,
                          prompt, complete=finished or cut_early)

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
            raise _translate(exc, self.base_url, self.model, self.timeout) from exc
        return list(resp.json()["tokens"])


def check_alternatives(tokens: Sequence[Token], want: int, url: str) -> None:
    """Refuse a generation none of whose positions came with the WANT top logprobs asked.

    vLLM keys each position's alternatives by their text, so two that decode alike keep one
    entry and a position may show fewer than asked; a server's limit cuts every position.
    """
    if want > 1 and tokens and max(len(t.top) for t in tokens) < want:
        got = max(len(t.top) for t in tokens)
        raise NoLogprobs(f"the server at {url} returned {got} top logprobs where {want} were "
                         "asked (the trigger reads each position's alternatives); start vLLM "
                         f"with --max-logprobs {want} or choose another trigger")


def _tokens_of(piece: str, info: dict[str, Any] | None, base: int, url: str,
               want: int = 1) -> list[Token]:
    """Tokens of one streamed chunk, with offsets into the whole generation.

    vLLM's text_offset counts from the start of the generation. The chunk's own text can lag
    its tokens (text that might begin a stop string is held back), so the offsets, not the
    text received so far, place the tokens; BASE serves only when offsets are missing.
    """
    lp = completion_logprobs((info or {}).get("logprobs"))
    if lp is None and not want:
        return []
    if lp is None:
        if piece or (info or {}).get("finish_reason") is None:
            raise NoLogprobs(
                f"the server at {url} returned text without token logprobs; FLARE needs them. "
                "Use vLLM's OpenAI-compatible server (it honours `logprobs` on /v1/completions) "
                "and start it with --max-logprobs >= 1"
            )
        return []
    offsets = lp.get("text_offset")
    if not offsets:
        offsets, pos = [], base
        for tok in lp["tokens"]:
            offsets.append(pos)
            pos += len(tok)
    tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
    return [Token(tok, float(logprob), off,
                  tuple(float(v) for v in top.values()) if want > 1 and top else ())
            for tok, logprob, off, top in zip(lp["tokens"], lp["token_logprobs"], offsets, tops,
                                              strict=True)
            if logprob is not None]
