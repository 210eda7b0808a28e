"""A disk cache of LM generations, so that a rerun with a changed metric costs nothing.

Identical requests (model, prompt, limits, stop strings, biases, sentence splitter) to a
server of the same weights (the root it loaded them from, its max_model_len) are served from
SQLite. Wall times of a cached run are therefore not comparable to a live one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError, LMServerUnreachable
from activerag.serving.generation import Generation, Token
from activerag.serving.lm import LM, CutFn, text_sink
from activerag.serving.running import server_entries
from activerag.serving.token_lm import Position, Samples, Steps

_active: Path | None = None
_samples: Path | None = None
# Bumped whenever a stored Generation would mean something else (2: `complete` was added).
CACHE_FORMAT = 2
# Seconds a write waits for another writer's lock (several evaluations share one cache, and a
# commit on a loaded disk can take seconds).
BUSY_TIMEOUT = 120.0


def enable(path: Path) -> None:
    """Wrap every LM the graphs make from now on in a cache stored at PATH."""
    global _active
    _active = path


def active() -> Path | None:
    """The cache file in use, if any."""
    return _active


def enable_samples(path: Path) -> None:
    """Remember FB-RAG's light samples at PATH (`enable` does too, with every generation)."""
    global _samples
    _samples = path


def samples_active() -> Path | None:
    """Where FB-RAG's light samples are remembered, if anywhere."""
    return _samples or _active


def state() -> tuple[Path | None, Path | None]:
    """What `enable` and `enable_samples` turned on, for `restore`."""
    return _active, _samples


def restore(saved: tuple[Path | None, Path | None]) -> None:
    """Put back a `state()`: the cache as it was before a command turned it on."""
    global _active, _samples
    _active, _samples = saved


class _Table:
    """One SQLite table of JSON values by key, safe to share between threads and processes
    (write-ahead log: readers never wait for a writer, writers wait up to TIMEOUT seconds)."""

    def __init__(self, path: Path, table: str, timeout: float = BUSY_TIMEOUT) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path, self._table, self._timeout = path, table, timeout
        self._db = sqlite3.connect(path, timeout=timeout, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._locked():
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT)")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Turn a lock that outlasted the wait into an error that says what to do."""
        try:
            yield
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
            raise ActiveRagError(
                f"the LM cache {self._path} stayed locked by another process for more than "
                f"{self._timeout:g} s ({e}); wait for the other run to finish, or give this one "
                "its own cache file") from None

    def get(self, key: str) -> Any:
        with self._lock, self._locked():
            row = self._db.execute(f"SELECT value FROM {self._table} WHERE key = ?",
                                   (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        with self._lock, self._locked():
            try:
                self._db.execute(f"INSERT OR REPLACE INTO {self._table} VALUES (?, ?)",
                                 (key, json.dumps(value)))
                self._db.commit()
            except sqlite3.OperationalError:
                self._db.rollback()
                raise


def _table_at(path: Path, table: str) -> Any:
    """The cache TABLE in the file at PATH, or in the database of ACTIVERAG_DATABASE_URL when
    that is set (serving/pg_cache.py)."""
    from activerag.database import database_url

    url = database_url()
    if url is None:
        return _Table(path, table)
    from activerag.serving.pg_cache import PgTable

    return PgTable(url, table)


def _digest(**fields: Any) -> str:
    return hashlib.sha256(json.dumps({"format": CACHE_FORMAT, **fields}, sort_keys=True,
                                     default=str).encode()).hexdigest()


def served_identity(models: list[dict[str, Any]], model: str) -> dict[str, Any]:
    """What identifies MODEL's weights among a server's /v1/models entries MODELS: the root it
    loaded them from and its max_model_len (None for what the server does not say)."""
    entry = next((m for m in models if m.get("id") == model), None)
    if entry is None and len(models) == 1:
        entry = models[0]
    return {"root": (entry or {}).get("root"), "max_model_len": (entry or {}).get("max_model_len")}


def served_weights(base_url: str, model: str) -> list[dict[str, Any]]:
    """The identity (`served_identity`) of MODEL on each endpoint of the comma-separated
    BASE_URL, once per distinct one."""
    out: list[dict[str, Any]] = []
    for url in [u.strip().rstrip("/") for u in base_url.split(",") if u.strip()]:
        try:
            listed = server_entries(url, timeout=10.0)
        except (LMServerUnreachable, ValueError) as exc:
            raise LMServerUnreachable(
                f"the LM cache asks {url}/models which weights it serves, and got no answer "
                f"({exc!r}); start the server (activerag serve) or run without --cache") from exc
        identity = served_identity(listed, model)
        if identity not in out:
            out.append(identity)
    return out


_DRAWS: dict[tuple[str, str], asyncio.Lock] = {}
"""The draw under way for each (cache file, key)."""


class CachedSampler:
    """FB-RAG's light sampler with its draws remembered by prompt and sampling settings.

    Unseeded samples are independent draws, so a request for N is served by the first N of a
    remembered draw of at least N: a sweep over K = 1..5 reuses one K = 5 draw, and methods
    that differ only after stage II (Ours-F, Ours-FB, Y) read the same samples. A seeded
    request is only served by the identical request. The Samples served carry the wall time
    of the draw that made them (`drawn_seconds`)."""

    def __init__(self, sampler: Any, path: Path) -> None:
        self.sampler = sampler
        self.model = sampler.model
        self._table = _table_at(path, "samples")
        self.hits = 0

    def __getattr__(self, name: str) -> Any:  # tokenize, detokenize, context_window
        return getattr(self.sampler, name)

    async def sample(self, prompt: str, n: int, max_tokens: int, *, temperature: float,
                     top_p: float, top_k: int, seed: int | None,
                     separate: bool = False, stop: Sequence[str] = ()) -> Samples:
        exact = {"n": n, "separate": separate} if seed is not None else {}
        stops = {"stop": list(stop)} if stop else {}  # a draw without stops keeps its old key
        key = _digest(model=self.model, prompt=prompt, max_tokens=max_tokens,
                      temperature=temperature, top_p=top_p, top_k=top_k, seed=seed, **exact,
                      **stops)
        # one draw per key at a time in this process: methods run side by side on the same
        # question (fb_rag and fb_rag_fb in one eval) would otherwise each draw, and each
        # read its own samples while the cache kept one of them
        async with _DRAWS.setdefault((str(self._table._path), key), asyncio.Lock()):
            found = await asyncio.to_thread(self._table.get, key)
            if found is not None and len(found["texts"]) >= n:
                self.hits += 1
                share = n / len(found["texts"])
                return Samples(found["texts"][:n], found["prompt_tokens"],
                               round(found["generated_tokens"] * share), found["requests"],
                               found["seconds"])
            start = time.perf_counter()
            out = await self.sampler.sample(prompt, n, max_tokens, temperature=temperature,
                                            top_p=top_p, top_k=top_k, seed=seed,
                                            separate=separate, **stops)
            value = {"texts": out.texts, "prompt_tokens": out.prompt_tokens,
                     "generated_tokens": out.generated_tokens, "requests": out.requests,
                     "seconds": time.perf_counter() - start}
            await asyncio.to_thread(self._table.put, key, value)
            return out


class _Remembered:
    """What the caches of an LM's requests share: the LM, a table of its answers, the hits,
    and what identifies the weights it serves."""

    def __init__(self, lm: Any, path: Path, table: str,
                 served: list[dict[str, Any]] | None) -> None:
        self.lm = lm
        self.model = lm.model
        self._table = _table_at(path, table)
        self.hits = 0
        self.served = served
        """What identifies the weights served (`served_weights`); None: asked of the LM's
        base_url on first use, or left out of the key for an LM that has none."""

    async def _weights(self) -> list[dict[str, Any]] | None:
        """`served`, asked of the LM's base_url the first time it is needed."""
        base_url = getattr(self.lm, "base_url", None)
        if self.served is None and isinstance(base_url, str):
            self.served = await asyncio.to_thread(served_weights, base_url, self.model)
        return self.served


class CachedLM(_Remembered):
    """An LM whose generations are remembered by request and served weights."""

    def __init__(self, lm: LM, path: Path, served: list[dict[str, Any]] | None = None) -> None:
        super().__init__(lm, path, "gen", served)

    def _key(self, prompt: str, **params: Any) -> str:
        cut = params.pop("cut")
        # a cut is known by what it cuts with: its own fingerprint (the answer cut) or its
        # splitter's (a bound first_sentence_end), never by a repr holding a memory address
        own = getattr(cut, "fingerprint", None)
        params["cut"] = own if isinstance(own, str) else getattr(
            getattr(cut, "__self__", None), "fingerprint", repr(cut))
        top = getattr(self.lm, "top_logprobs", 1)
        if isinstance(top, int) and top > 1:  # only then do the tokens carry alternatives
            params["top_logprobs"] = top
        if self.served is not None:
            params["served"] = self.served
        return _digest(model=self.model, prompt=prompt, **params)

    async def generate(self, prompt: str, *, max_tokens: int, cut: CutFn | None = None,
                       stop: list[str] | None = None,
                       logit_bias: dict[int, float] | None = None) -> Generation:
        await self._weights()
        key = self._key(prompt, max_tokens=max_tokens, cut=cut, stop=stop, logit_bias=logit_bias)
        data = await asyncio.to_thread(self._table.get, key)
        if data is not None:
            self.hits += 1
            data["tokens"] = [Token(**{**t, "top": tuple(t.get("top", ()))})
                              for t in data["tokens"]]
            if (sink := text_sink.get()) is not None and data["text"]:
                sink(data["text"])
            return Generation(**data, prompt=prompt)
        gen = await self.lm.generate(prompt, max_tokens=max_tokens, cut=cut, stop=stop,
                                     logit_bias=logit_bias)
        # a hit costs the server nothing: what it cost the first time is not kept
        value = {k: v for k, v in asdict(gen).items() if k not in ("prompt", "server")}
        await asyncio.to_thread(self._table.put, key, value)
        return gen

    async def token_ids(self, text: str) -> list[int]:
        return await self.lm.token_ids(text)


class CachedTokenLM(_Remembered):
    """A token-level LM (REPLUG's ensemble, SeaKR-lite's look-ahead) whose greedy look-aheads
    and scorings are remembered by token ids and served weights; the rest (tokenize, sample,
    ...) goes to the LM itself, uncached."""

    def __init__(self, lm: Any, path: Path, served: list[dict[str, Any]] | None = None) -> None:
        super().__init__(lm, path, "tokens", served)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lm, name)

    async def _remembered(self, compute: Any, **fields: Any) -> Any:
        key = _digest(model=self.model, served=await self._weights(), **fields)
        found = await asyncio.to_thread(self._table.get, key)
        if found is not None:
            self.hits += 1
            return found
        value = await compute()
        await asyncio.to_thread(self._table.put, key, asdict(value) if isinstance(value, Steps)
                                else value)
        return value

    async def steps(self, prompt: Sequence[int], max_tokens: int, top: int) -> Steps:
        out = await self._remembered(lambda: self.lm.steps(prompt, max_tokens, top),
                                     request="steps", prompt=list(prompt),
                                     max_tokens=max_tokens, top=top)
        if isinstance(out, Steps):
            return out
        return Steps([Position(p["token"], p["logprob"], {int(k): v for k, v in p["top"].items()})
                      for p in out["positions"]], out["ended"], out["prompt_tokens"])

    async def score(self, prompt: Sequence[int], continuation: Sequence[int]) -> list[float]:
        return list(await self._remembered(lambda: self.lm.score(prompt, continuation),
                                           request="score", prompt=list(prompt),
                                           continuation=list(continuation)))
