"""One model on several endpoints: `base_url` "http://a:8765/v1,http://b:8765/v1".

Each question's requests go to one replica, so its prompts (which share their exemplars and the
question) meet vLLM's prefix cache there; questions spread over the replicas by a hash of a
sticky key. A replica that does not answer (refused, reset, timed out, a 5xx) is left out for a
while and the request goes to the next one; a request that failed midway starts again there
(decoding is greedy, so the text is the same). On a GPU each endpoint can itself be vLLM with
tensor or data parallelism.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from activerag.errors import LMServerUnreachable, ModelMismatch, SettingError
from activerag.serving.lm_errors import LMServerError

log = logging.getLogger(__name__)
T = TypeVar("T")
COOLDOWN = 30.0
"""Seconds a replica that failed is tried only after the others."""
_sticky: ContextVar[str | None] = ContextVar("activerag_sticky", default=None)


@contextmanager
def sticky(key: str) -> Iterator[None]:
    """Within the block (and the tasks it starts), requests go to KEY's replica."""
    token = _sticky.set(key)
    try:
        yield
    finally:
        _sticky.reset(token)


def sticky_key(prompt: str) -> str:
    """The block's key, else the prompt's last question line (the question a FLARE or
    single-time prompt answers), else the prompt."""
    key = _sticky.get()
    if key is not None:
        return key
    at = prompt.rfind("Question:")
    return prompt[at:].split("\n", 1)[0] if at >= 0 else prompt


def urls(base_url: str) -> list[str]:
    """The endpoints named by BASE_URL (comma-separated)."""
    return [u.strip() for u in base_url.split(",") if u.strip()]


def order(first: int, n: int, down_until: dict[int, float], now: float) -> list[int]:
    """Replicas in the order to try: from FIRST round the ring, those resting (DOWN_UNTIL in
    the future) after all the others, in the same ring order."""
    ring = [(first + i) % n for i in range(n)]
    return ([i for i in ring if down_until.get(i, 0.0) <= now]
            + [i for i in ring if down_until.get(i, 0.0) > now])


def home(key: str, n: int) -> int:
    """KEY's replica of N (the same in every process)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % n


def reconnect_seconds() -> float:
    """How long a run waits for servers that answered before and then all went away (a
    restart): ACTIVERAG_LM_RECONNECT, else 120. Servers that never answered fail at once."""
    raw = os.environ.get("ACTIVERAG_LM_RECONNECT", "120")
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise SettingError(f"ACTIVERAG_LM_RECONNECT={raw!r} is not a number of seconds (0 or "
                           "more); set it to one (e.g. 120) or unset it")
    return seconds


class Replicas:
    """An LM over CLIENTS, each an endpoint serving the same model (see the module); one
    endpoint is a replica set of one, which waits out its server's restart."""

    def __init__(self, clients: Sequence[Any], cooldown: float = COOLDOWN) -> None:
        models = {c.model for c in clients}
        if len(models) > 1:
            raise ModelMismatch(f"the replicas serve different models ({sorted(models)}); "
                                "every endpoint of base_url must serve the same one")
        self.clients = list(clients)
        self.model = self.clients[0].model
        self.top_logprobs = getattr(self.clients[0], "top_logprobs", 1)
        self.base_url = ",".join(getattr(c, "base_url", "?") for c in self.clients)
        self.cooldown = cooldown
        self.down_until: dict[int, float] = {}
        self.served = [0] * len(self.clients)
        self._spread = itertools.count()

    async def _call(self, key: str, call: Callable[[Any], Awaitable[T]]) -> T:
        deadline = time.monotonic() + reconnect_seconds()
        pause = 1.0
        while True:
            try:
                return await self._once(key, call)
            except LMServerUnreachable as exc:
                # only a run that has been answered waits: a wrong URL fails at once
                if not any(self.served) or time.monotonic() + pause > deadline:
                    raise
                log.warning("%s; waiting %.0f s for a server to come back", exc, pause)
                await asyncio.sleep(pause)
                pause = min(2 * pause, 10.0)

    async def _once(self, key: str, call: Callable[[Any], Awaitable[T]]) -> T:
        failures = []
        for i in order(home(key, len(self.clients)), len(self.clients), self.down_until,
                       time.monotonic()):
            client = self.clients[i]
            try:
                out = await call(client)
            except (LMServerUnreachable, LMServerError) as exc:
                self.down_until[i] = time.monotonic() + self.cooldown
                failures.append(f"{getattr(client, 'base_url', i)}: {exc}")
                log.warning("replica %s failed (%s); trying the next", getattr(
                    client, "base_url", i), str(exc).split(";")[0])
                continue
            self.down_until.pop(i, None)
            self.served[i] += 1
            return out
        raise LMServerUnreachable("no replica answered: " + " | ".join(failures))

    async def generate(self, prompt: str, **kw: Any) -> Any:
        return await self._call(sticky_key(prompt), lambda c: c.generate(prompt, **kw))

    async def token_ids(self, text: str) -> list[int]:
        return await self._call(str(next(self._spread)), lambda c: c.token_ids(text))
