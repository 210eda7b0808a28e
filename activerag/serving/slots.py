"""Which llama-server slot a completion goes to: the free one whose cache holds the longest
start of its prompt.

llama-server keeps a prompt cache per slot and, left to choose, gives a request the idle slot
most like it. A stream the client closes at a sentence's end keeps its slot busy until the
server notices, a token later; the question's next request, sent meanwhile, then lands on
another slot and prefills its whole prompt anew (about 1,800 tokens with the paper's exemplars,
measured in results/accounting.md). So the client names the slot (`id_slot`): of the slots it
has no request open on, the one whose last prompt and reply share the longest start with the
new prompt, the least recently used among equals. A slot the server is still finishing with
makes the request wait those few milliseconds, not start cold. Books are kept per server URL
for the whole process, so every client of one server shares them; other processes on the same
server are not seen (their requests at worst wait for a slot, never change an answer).

Questions asked at once would each prefill the shared prefix (the exemplars) on a slot of
their own. So the first request on a server goes alone; the requests that arrive meanwhile wait
for it, and it then warms one empty slot per waiter (`warm`): a one-token request there, then
its own prompt, which llama-server copies from its prompt cache in host memory (`--cache-ram`,
filled with the idle slots at each new request) into a slot that holds something else, though
never into an empty one. Measured: three slots warmed with a 731-token prompt in 0.4 s, against
about 5 s each to prefill it. A server without that cache prefills each in turn instead.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from activerag.serving.security import auth_headers

COLD, WARMING, WARM = "cold", "warming", "warm"
log = logging.getLogger(__name__)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common start of A and B."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # the slices compare in C: a binary search beats a loop per character
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class SlotBook:
    """What this process last put in each slot of one server, and which it has requests on."""

    def __init__(self, slots: int, seed: int | None = None) -> None:
        if slots < 1:
            raise ValueError(f"a server has at least one slot, not {slots}")
        self.held = [""] * slots
        self.open = [0] * slots
        self.used = [0] * slots
        # processes on one server start on different slots (each at its pid's turn)
        self._first = (os.getpid() if seed is None else seed) % slots
        self._clock = itertools.count(1)
        self._lock = threading.Lock()
        self.state = COLD
        self.waiting = 0

    async def admit(self) -> bool:
        """Wait while the first request on this server warms it for those that came meanwhile;
        True for the first request itself, which is to call `warm` when done."""
        waited = False
        try:
            while True:
                with self._lock:
                    if self.state == COLD:  # one slot: nothing to warm
                        self.state = WARMING if len(self.held) > 1 else WARM
                        return self.state == WARMING
                    if self.state == WARM:
                        return False
                    if not waited:
                        self.waiting, waited = self.waiting + 1, True
                await asyncio.sleep(0.02)
        finally:
            if waited:
                with self._lock:
                    self.waiting -= 1

    def targets(self) -> list[int]:
        """The empty slots to warm: one for each request waiting now, in this process's turn."""
        n = len(self.held)
        with self._lock:
            order = [(self._first + i) % n for i in range(n)]
            return [i for i in order if not self.held[i] and not self.open[i]][:self.waiting]

    def fill(self, slot: int, text: str) -> None:
        """SLOT now holds TEXT (a warming request put it there)."""
        with self._lock:
            self.held[slot] = text

    def warmed(self) -> None:
        """Let the waiting requests go."""
        with self._lock:
            self.state = WARM

    def choose(self, prompt: str) -> int | None:
        """The slot for PROMPT (None: every slot has a request of ours open)."""
        n = len(self.held)
        with self._lock:
            free = [i for i in range(n) if not self.open[i]]
            if not free:
                return None
            slot = max(free, key=lambda i: (common_prefix(self.held[i], prompt),
                                            -self.used[i], -((i - self._first) % n)))
            self.open[slot] += 1
            self.used[slot] = next(self._clock)
            return slot

    def release(self, slot: int, text: str) -> None:
        """The request on SLOT is over; the slot's cache now starts with TEXT."""
        with self._lock:
            self.open[slot] -= 1
            self.held[slot] = text

    @contextmanager
    def request(self, prompt: str) -> Iterator[tuple[int | None, list[str]]]:
        """Hold a slot for PROMPT while the block runs; the block appends what the server wrote
        after the prompt to the list it is given."""
        slot = self.choose(prompt)
        written: list[str] = []
        try:
            yield slot, written
        finally:
            if slot is not None:
                self.release(slot, prompt + "".join(written))


_books: dict[str, SlotBook] = {}
_lock = threading.Lock()


def book_for(base_url: str, slots: int) -> SlotBook:
    """The process's book of BASE_URL's SLOTS slots (a new one if the count changed: the
    server was restarted with another --parallel)."""
    with _lock:
        book = _books.get(base_url)
        if book is None or len(book.held) != slots:
            book = _books[base_url] = SlotBook(slots)
        return book


def forget(base_url: str) -> None:
    """Drop BASE_URL's book (a server restarted there holds nothing we put in it)."""
    with _lock:
        _books.pop(base_url, None)


async def slot_count(http: httpx.AsyncClient, base_url: str) -> int | None:
    """llama-server's slots (/props total_slots); None if it does not say."""
    try:
        resp = await http.get(base_url.removesuffix("/v1") + "/props")
        resp.raise_for_status()
        count = resp.json().get("total_slots")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return count if isinstance(count, int) and count > 0 else None


async def warm(book: SlotBook, base_url: str, model: str, prompt: str, timeout: float) -> None:
    """Put PROMPT, which the first request left in its slot, into an empty slot for each request
    waiting (see the module), then let them go: a one-token request first makes each slot hold
    something (llama-server loads its prompt cache only into a slot that does), then PROMPT with
    one token to generate. A failure here only costs the waiting requests their prefill."""
    try:
        targets = book.targets()
        if targets:
            url = base_url.rstrip("/") + "/completions"
            async with httpx.AsyncClient(timeout=timeout, headers=auth_headers()) as http:
                for text in (".", prompt):
                    for slot in targets:
                        resp = await http.post(url, json={
                            "model": model, "prompt": text, "max_tokens": 1, "temperature": 0.0,
                            "id_slot": slot})
                        resp.raise_for_status()
                        book.fill(slot, text)
    except httpx.HTTPError as exc:
        log.warning("warming llama-server's slots failed (%s); each question prefills its own",
                    exc)
    finally:
        book.warmed()
