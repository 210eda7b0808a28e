"""Token-level access to the served LM, for ensembles that mix next-token distributions.

REPLUG (Eq. 2) needs, per document, the top-N next-token log-probabilities at every position of
a shared continuation, and the log-probability of a given text. vLLM's completion endpoint
serves both: prompts go as token ids (so every document continues the same tokens), tokens come
back as ids (`return_tokens_as_token_ids`), and `echo` with `max_tokens=0` scores a text.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from activerag.errors import (
    ActiveRagError,
    LMServerUnreachable,
    ModelMismatch,
    NoLogprobs,
)
from activerag.serving.dialect import (
    ID_PREFIX,
    VLLM,
    completion_logprobs,
    context_of,
    detokenized,
    engine_of,
    tokenize_body,
)
from activerag.serving.lm import lm_timeout
from activerag.serving.lm_errors import (
    LMServerError,
    busy_error,
    too_long_error,
    unreachable_error,
)
from activerag.serving.security import auth_headers, unauthorized_error

RETRIES = 2
"""Times a request is sent again after the server dropped its connection."""


@dataclass(frozen=True)
class Position:
    """One generated position: the server's greedy token and the top-N distribution there."""

    token: int
    logprob: float
    top: dict[int, float]
    """Token id -> natural-log probability, the N most likely tokens."""


@dataclass
class Steps:
    """What one greedy look-ahead request returned."""

    positions: list[Position]
    ended: bool
    """The model ended its output (end of sequence) after the last position."""
    prompt_tokens: int = 0


@dataclass
class Samples:
    """K sampled continuations of one prompt and what they cost."""

    texts: list[str]
    prompt_tokens: int
    generated_tokens: int
    requests: int
    drawn_seconds: float | None = None
    """Set when the samples come from a cache: the wall time of the draw that made them."""


class Sampler(Protocol):
    """What FB-RAG's light LM does: draw N samples of a text prompt."""

    model: str

    async def sample(self, prompt: str, n: int, max_tokens: int, *, temperature: float,
                     top_p: float, top_k: int, seed: int | None,
                     separate: bool = False, stop: Sequence[str] = ()) -> Samples:
        """N samples of PROMPT; SEPARATE: one request each (seeds seed, seed+1, ...) instead
        of one request with n=N, whose samples share the prompt's prefill; each sample ends
        at the first of STOP (none: only max_tokens or the model ends it)."""
        ...


class TokenLM(Protocol):
    """What a token-level ensemble needs of an LM; VLLMTokens and the tests' scripted one."""

    model: str

    async def tokenize(self, text: str) -> list[int]: ...

    async def detokenize(self, ids: Sequence[int]) -> str: ...

    async def steps(self, prompt: Sequence[int], max_tokens: int, top: int) -> Steps:
        """Greedy continuation of PROMPT, MAX_TOKENS at most, with the TOP-N at each position."""
        ...

    async def score(self, prompt: Sequence[int], continuation: Sequence[int]) -> list[float]:
        """Natural-log probability of each CONTINUATION token after PROMPT."""
        ...


async def cut_to_fit(lm: TokenLM, cut: Callable[[int], Awaitable[str]], limit: int,
                     room: int) -> tuple[str, list[int], int] | None:
    """The text CUT(n) makes for the largest n from LIMIT down whose text LM tokenizes into at
    most ROOM tokens, with those ids and n; None when four tries found none. A cut text can
    tokenize a little longer than the ids it was cut to, so each try lowers n by the overflow.
    The one fit-to-window loop: FB-RAG cuts a prompt in the middle, REPLUG a document's tail."""
    for _ in range(4):
        text = await cut(limit)
        ids = await lm.tokenize(text)
        over = len(ids) - room
        if over <= 0:
            return text, ids, limit
        limit -= over
    return None


async def context_window_of(lm: object) -> int | None:
    """LM's context length where it can say (VLLMTokens asks the server); None otherwise."""
    ask = getattr(lm, "context_window", None)
    return await ask() if ask is not None else None


def _token_id(key: str) -> int:
    if not key.startswith(ID_PREFIX):
        raise ActiveRagError(f"the server returned token {key!r}, not an id; it must honour "
                             "return_tokens_as_token_ids (vLLM's OpenAI-compatible server does)")
    return int(key.removeprefix(ID_PREFIX))


@dataclass
class VLLMTokens:
    """Token-level requests to a vLLM OpenAI-compatible server."""

    base_url: str
    model: str
    timeout: float = field(default_factory=lm_timeout)
    _clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False)
    _pieces: dict[int, str] = field(default_factory=dict, repr=False)
    """Texts of single tokens already asked for (the ensemble asks for each it decides)."""
    _window: int | None = field(default=None, repr=False)
    _engine: str | None = field(default=None, repr=False)

    def _client(self) -> httpx.AsyncClient:
        """One HTTP pool per event loop (a pool is bound to the loop that made it)."""
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = httpx.AsyncClient(timeout=self.timeout,
                                                    headers=auth_headers())
        return self._clients[loop]

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST BODY (with this client's model) to PATH of the server, its JSON reply back:
        every request of this client goes through here (a place to decorate them)."""
        url = self.base_url.rstrip("/").removesuffix("/v1") + path
        try:
            for attempt in range(RETRIES + 1):
                try:
                    resp = await self._client().post(url, json={"model": self.model, **body})
                    break
                except (httpx.ReadError, httpx.RemoteProtocolError):
                    # a busy server can drop a connection; the requests are idempotent
                    if attempt == RETRIES:
                        raise
                    await asyncio.sleep(2.0 ** attempt)
        except (httpx.ReadTimeout, httpx.WriteTimeout) as exc:
            raise busy_error(self.base_url, self.timeout) from exc
        except httpx.HTTPError as exc:
            # the server went away: the one that answers next (restarted on this URL) may be
            # the other engine, with another context length, so both are asked again
            self._engine = self._window = None
            # httpx's own errors can have an empty text; their repr still names them
            raise unreachable_error(self.base_url, repr(exc)) from exc
        if resp.status_code >= 500:
            raise LMServerError(f"the LM server at {self.base_url} failed ({resp.status_code}: "
                                f"{resp.text[:300]}); retrying may help")
        if resp.status_code == 401:
            raise unauthorized_error(self.base_url)
        if resp.status_code == 404:
            raise ModelMismatch(f"the server at {self.base_url} does not serve {self.model!r} "
                                f"or has no {path} ({resp.text[:300]})")
        if resp.status_code >= 400:
            text = resp.text[:500]
            raise too_long_error(self.model, text) or ActiveRagError(
                f"the LM server rejected the request ({resp.status_code}): {text}")
        return dict(resp.json())

    async def _models(self) -> list[dict[str, Any]]:
        try:
            resp = await self._client().get(self.base_url.rstrip("/") + "/models")
            return list(resp.json().get("data", []))
        except (httpx.HTTPError, ValueError) as exc:
            raise LMServerUnreachable(f"the LM server at {self.base_url} is unreachable "
                                      f"({exc!r}); start it with `activerag serve`") from exc

    async def engine(self) -> str:
        """Which server this is (dialect.VLLM or LLAMA_CPP), asked once with the context
        window; a server that does not list its models is taken for vLLM (and asked again)."""
        if self._engine is None:
            try:
                await self.context_window()
            except LMServerUnreachable:
                return VLLM
        return self._engine or VLLM

    async def context_window(self) -> int | None:
        """The served model's context length (vLLM's max_model_len, llama-server's context
        per slot), asked once."""
        if self._window is None:
            models = await self._models()
            lengths = [context_of(m) for m in models
                       if m.get("id") == self.model or len(models) == 1]
            self._engine = engine_of(models)
            self._window = lengths[0] if lengths and lengths[0] else 0
        return self._window or None

    async def tokenize(self, text: str) -> list[int]:
        out = await self.post("/tokenize", tokenize_body(await self.engine(), text))
        return list(out["tokens"])

    async def detokenize(self, ids: Sequence[int]) -> str:
        if not ids:
            return ""
        if len(ids) == 1 and ids[0] in self._pieces:
            return self._pieces[ids[0]]
        text = detokenized(await self.post("/detokenize", {"tokens": list(ids)}))
        if len(ids) == 1:
            self._pieces[ids[0]] = text
        return text

    async def sample(self, prompt: str, n: int, max_tokens: int, *, temperature: float,
                     top_p: float, top_k: int, seed: int | None,
                     separate: bool = False, stop: Sequence[str] = ()) -> Samples:
        body: dict[str, Any] = {"prompt": prompt, "max_tokens": max_tokens,
                                "temperature": temperature, "top_p": top_p, "top_k": top_k}
        if stop:
            body["stop"] = list(stop)
        if separate:
            outs = await asyncio.gather(*[
                self.post("/v1/completions", {**body, "n": 1, "seed": None if seed is None
                                               else seed + i}) for i in range(n)])
        else:
            outs = [await self.post("/v1/completions", {**body, "n": n, "seed": seed})]
        texts = [c["text"] for out in outs
                 for c in sorted(out["choices"], key=lambda c: c.get("index", 0))]
        usage = [out.get("usage") or {} for out in outs]
        return Samples(texts, sum(u.get("prompt_tokens", 0) for u in usage),
                       sum(u.get("completion_tokens", 0) for u in usage), len(outs))

    async def steps(self, prompt: Sequence[int], max_tokens: int, top: int) -> Steps:
        out = await self.post("/v1/completions", {
            "prompt": list(prompt), "max_tokens": max_tokens, "temperature": 0.0,
            "logprobs": top, "return_tokens_as_token_ids": True})
        choice = out["choices"][0]
        lp = completion_logprobs(choice.get("logprobs"), as_ids=True)
        if not lp or not lp.get("top_logprobs"):
            if choice.get("text"):
                raise NoLogprobs(f"the server at {self.base_url} returned text without top "
                                 "logprobs; REPLUG needs them (vLLM: --max-logprobs >= 20)")
            return Steps([], choice.get("finish_reason") == "stop")
        positions = []
        for key, logprob, tops in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"],
                                      strict=True):
            if len(tops) < top:
                raise NoLogprobs(
                    f"the server at {self.base_url} returned {len(tops)} top logprobs where "
                    f"{top} were asked; start vLLM with --max-logprobs {top} or lower top_logprobs")
            positions.append(Position(_token_id(key), float(logprob),
                                      {_token_id(k): float(v) for k, v in tops.items()}))
        usage = out.get("usage") or {}
        return Steps(positions, choice.get("finish_reason") == "stop",
                     int(usage.get("prompt_tokens", 0)))

    async def score(self, prompt: Sequence[int], continuation: Sequence[int]) -> list[float]:
        out = await self.post("/v1/completions", {
            "prompt": [*prompt, *continuation], "max_tokens": 0, "echo": True, "logprobs": 1,
            "return_tokens_as_token_ids": True})
        lp = completion_logprobs(out["choices"][0].get("logprobs"))
        if not lp or len(lp.get("token_logprobs") or []) < len(prompt) + len(continuation):
            raise NoLogprobs(f"the server at {self.base_url} does not echo prompt logprobs; "
                             "scoring a text needs vLLM's echo with logprobs (llama-server has "
                             "none): serve with --engine vllm")
        values = lp["token_logprobs"][len(prompt):]
        if len(values) != len(continuation) or any(v is None for v in values):
            raise ActiveRagError(f"the server scored {len(values)} tokens of a "
                                 f"{len(continuation)}-token continuation")
        return [float(v) for v in values]
