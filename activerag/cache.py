"""A disk cache of LM generations, so that a rerun with a changed metric costs nothing.

Identical requests (model, prompt, limits, stop strings, biases, sentence splitter) are
served from SQLite. Wall times of a cached run are therefore not comparable to a live one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from activerag.lm import LM, CutFn, Generation, Token

_active: Path | None = None
# Bumped whenever a stored Generation would mean something else (2: `complete` was added).
CACHE_FORMAT = 2


def enable(path: Path) -> None:
    """Wrap every LM the graphs make from now on in a cache stored at PATH."""
    global _active
    _active = path


def active() -> Path | None:
    """The cache file in use, if any."""
    return _active


class CachedLM:
    """An LM whose generations are remembered by request."""

    def __init__(self, lm: LM, path: Path) -> None:
        self.lm = lm
        self.model = lm.model
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS gen (key TEXT PRIMARY KEY, value TEXT)")
        self._lock = threading.Lock()
        self.hits = 0

    def _key(self, prompt: str, **params: Any) -> str:
        cut = params.pop("cut")
        # a cut is known by what it cuts with: its own fingerprint (the answer cut) or its
        # splitter's (a bound first_sentence_end), never by a repr holding a memory address
        own = getattr(cut, "fingerprint", None)
        params["cut"] = own if isinstance(own, str) else getattr(
            getattr(cut, "__self__", None), "fingerprint", repr(cut))
        blob = json.dumps({"model": self.model, "prompt": prompt, "format": CACHE_FORMAT,
                           **params}, sort_keys=True,
                          default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    async def generate(self, prompt: str, *, max_tokens: int, cut: CutFn | None = None,
                       stop: list[str] | None = None,
                       logit_bias: dict[int, float] | None = None) -> Generation:
        key = self._key(prompt, max_tokens=max_tokens, cut=cut, stop=stop, logit_bias=logit_bias)
        with self._lock:
            row = self._db.execute("SELECT value FROM gen WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self.hits += 1
            data = json.loads(row[0])
            data["tokens"] = [Token(**t) for t in data["tokens"]]
            return Generation(**data, prompt=prompt)
        gen = await self.lm.generate(prompt, max_tokens=max_tokens, cut=cut, stop=stop,
                                     logit_bias=logit_bias)
        value = {k: v for k, v in asdict(gen).items() if k != "prompt"}
        await asyncio.to_thread(self._store, key, json.dumps(value))
        return gen

    def _store(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO gen VALUES (?, ?)", (key, value))
            self._db.commit()

    async def token_ids(self, text: str) -> list[int]:
        return await self.lm.token_ids(text)
