"""What the benchmarks ask of a running vLLM server besides answers: per-call timings seen by
the client, a cache salt per measured pass, /metrics, and bare completion streams.

`instrument()` wraps the OpenAI client's completion call, the one VLLMClient streams through,
and the token-level client's completion posts, so the library's own code path is what is
measured. Inside `salted(s)` every request carries
vLLM's `cache_salt` s: its prefix cache then serves a request only from earlier requests with
the same salt, so a pass cannot reuse what another pass computed. Inside `recording(calls)`
each completed call appends a `Call` (times seen by the client) to CALLS.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from activerag.context import FlareContext
from activerag.settings import Settings
from activerag.stores.bm25 import BM25Store

_salt: ContextVar[str | None] = ContextVar("bench_salt", default=None)
_calls: ContextVar[list[Call] | None] = ContextVar("bench_calls", default=None)
_METRIC = re.compile(r"^(vllm:[a-z_:]+)(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


@dataclass
class Call:
    """One streamed completion as the client saw it (perf_counter seconds)."""

    start: float
    """Before the request was sent."""
    first: float | None = None
    """The first chunk with a token (time to first token: queue, prefill, HTTP)."""
    last: float | None = None
    """The last chunk with a token."""
    end: float = 0.0
    """The stream closed (finished, or cut by the caller: vLLM aborts the request)."""
    handling: float = 0.0
    """Seconds the caller spent on chunks between reads (logprobs, the sentence cut)."""
    chunks: int = 0


class _TimedStream:
    """An openai AsyncStream that records a Call (iterated by the class's own __anext__, so a
    caller that stops early leaves no generator for the garbage collector to close)."""

    def __init__(self, stream: Any, call: Call, sink: list[Call] | None) -> None:
        self._stream, self._call, self._sink = stream, call, sink
        self._chunks: Any = None
        self._handed: float | None = None

    async def __aenter__(self) -> _TimedStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._stream.__aexit__(*exc)
        finally:
            self._call.end = time.perf_counter()
            if self._sink is not None:
                self._sink.append(self._call)

    def __aiter__(self) -> _TimedStream:
        self._chunks = self._stream.__aiter__()
        return self

    async def __anext__(self) -> Any:
        if self._handed is not None:  # the caller worked on the last chunk until now
            self._call.handling += time.perf_counter() - self._handed
        chunk = await self._chunks.__anext__()
        now = time.perf_counter()
        if chunk.choices:
            self._call.first = self._call.first or now
            self._call.last = now
        self._call.chunks += 1
        self._handed = time.perf_counter()
        return chunk


_installed = False


def instrument() -> None:
    """Wrap AsyncCompletions.create once: salt requests, time streams (see the module)."""
    global _installed
    if _installed:
        return
    from openai.resources.completions import AsyncCompletions

    original = AsyncCompletions.create

    async def create(self: Any, *args: Any, **kw: Any) -> Any:
        salt = _salt.get()
        if salt is not None:
            kw["extra_body"] = {**(kw.get("extra_body") or {}), "cache_salt": salt}
        call = Call(time.perf_counter())
        out = await original(self, *args, **kw)
        if kw.get("stream"):
            return _TimedStream(out, call, _calls.get())
        return out

    AsyncCompletions.create = create  # type: ignore[method-assign]
    _salt_token_requests()
    _installed = True


def _salt_token_requests() -> None:
    """The token-level client (REPLUG's ensemble, FB-RAG's sampler and reader) posts to
    /v1/completions itself, not through the OpenAI client: salt its requests too."""
    from activerag.serving.token_lm import VLLMTokens

    original = VLLMTokens.post

    async def post(self: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
        salt = _salt.get()
        if salt is not None and path.endswith("/completions"):
            body = {**body, "cache_salt": salt}
        return await original(self, path, body)

    VLLMTokens.post = post  # type: ignore[method-assign]


@contextmanager
def salted(salt: str) -> Iterator[None]:
    """Requests made in the block (and in the tasks it starts) carry cache_salt SALT."""
    token = _salt.set(salt)
    try:
        yield
    finally:
        _salt.reset(token)


@contextmanager
def recording(calls: list[Call]) -> Iterator[list[Call]]:
    """Streamed calls made in the block append their Call to CALLS."""
    token = _calls.set(calls)
    try:
        yield calls
    finally:
        _calls.reset(token)


def root(base_url: str) -> str:
    """The server's root URL (no /v1), of the first endpoint of BASE_URL."""
    return base_url.split(",")[0].strip().rstrip("/").removesuffix("/v1")


def scrape(base_url: str) -> dict[str, float]:
    """Every vllm: sample of /metrics (counters, gauges, histogram _sum and _count) summed over
    labels; histogram buckets are left out."""
    text = httpx.get(root(base_url) + "/metrics", timeout=10).text
    out: dict[str, float] = {}
    for name, value in _METRIC.findall(text):
        if not name.endswith("_bucket"):
            out[name] = out.get(name, 0.0) + float(value)
    return out


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def gauges(base_url: str) -> dict[str, float]:
    """vLLM's request gauges (num_requests_running, _waiting), read cheaply from /metrics."""
    text = httpx.get(root(base_url) + "/metrics", timeout=10).text
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("vllm:num_requests_"):
            name, value = line.split("{", 1)[0], line.rsplit(" ", 1)[1]
            out[name] = out.get(name, 0.0) + float(value)
    return out


class Occupancy:
    """Polls the server's running and waiting requests every INTERVAL seconds in a thread,
    keeping the CPU seconds the polling costs this process (`cpu`)."""

    def __init__(self, base_url: str, interval: float = 2.0) -> None:
        self.base_url, self.interval = base_url, interval
        self.running: list[float] = []
        self.waiting: list[float] = []
        self.cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            start = time.thread_time()
            try:
                m = gauges(self.base_url)
            except httpx.HTTPError:
                continue
            finally:
                self.cpu += time.thread_time() - start
            self.running.append(m.get("vllm:num_requests_running", 0.0))
            self.waiting.append(m.get("vllm:num_requests_waiting", 0.0))

    def __enter__(self) -> Occupancy:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mean_running(self) -> float:
        return sum(self.running) / len(self.running) if self.running else float("nan")


async def bare_streams(base_url: str, model: str, streams: int, requests: int,
                       prompt_tokens: int, shared_tokens: int, gen_tokens: int,
                       seed: int = 0) -> tuple[float, int]:
    """STREAMS parallel loops of REQUESTS completions each, straight to the server: prompts of
    PROMPT_TOKENS random token ids whose first SHARED_TOKENS are the same in every request (and
    sent once, untimed, so that they are cached, as FLARE's exemplars and a question's earlier
    prompts are), exactly GEN_TOKENS generated (ignore_eos). Returns (wall seconds, tokens
    generated)."""
    rng = random.Random(seed)
    salt = f"bare-{seed}-{time.time_ns()}"
    url = root(base_url) + "/v1/completions"

    def ids(n: int) -> list[int]:
        return [rng.randrange(1000, 40000) for _ in range(n)]

    prefix = ids(shared_tokens)
    tails = [[ids(max(1, prompt_tokens - shared_tokens)) for _ in range(requests)]
             for _ in range(streams)]
    limits = httpx.Limits(max_connections=streams + 4, max_keepalive_connections=streams + 4)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:

        async def complete(prompt: list[int], n: int) -> int:
            body = {"model": model, "prompt": prompt, "max_tokens": n, "temperature": 0.0,
                    "ignore_eos": True, "cache_salt": salt}
            resp = await http.post(url, json=body)
            resp.raise_for_status()
            return int(resp.json()["usage"]["completion_tokens"])

        if shared_tokens:
            await complete(prefix, 1)

        async def loop(s: int) -> int:
            return sum([await complete(prefix + tail, gen_tokens) for tail in tails[s]])

        start = time.perf_counter()
        done = await asyncio.gather(*[loop(s) for s in range(streams)])
        return time.perf_counter() - start, sum(done)


def flare_on_2wiki(store: str | None, max_answer_tokens: int) -> tuple[FlareContext, str]:
    """FLARE's context as the LM benchmarks run it (the paper's exemplars, the served LM) over
    STORE (default: ACTIVERAG_HOME's store-2wiki), and the BM25 engine that will answer, which
    it also prints."""
    settings = Settings.from_env()
    store = store or str(settings.home / "store-2wiki")
    engine = "bm25s index" if BM25Store(Path(store) / "bm25").indexed else (
        "rank-bm25: the store has no bm25s index; `activerag ingest CORPUS --store STORE "
        "--no-dense` builds it")
    print(f"BM25 over {store}: {engine}", flush=True)
    return FlareContext(base_url=settings.url, store_dir=store, prompt_set="paper",
                        max_answer_tokens=max_answer_tokens), engine
