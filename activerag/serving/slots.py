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

Only where the server keeps no prompt cache in host memory (`--cache-ram 0`, as every server
activerag starts): with that cache (llama-server's default, 8 GiB), requests named to slots and
sent at once were answered from other requests' prompts. Measured with
benchmarks/robustness/crosstalk.py (SmolLM2 on 4 slots, 3 processes x 2 requests at once, 120
requests): 5 and 8 answers went on with another request's code word, against 0 with
`--cache-ram 0`, and 0 where the server chose the slots itself (results/crosstalk.md; llama.cpp
issue #27148 reports the same cache crossing unnamed requests). So a slot is named only on a
llama-server that this machine runs with `--cache-ram 0`, which `safe_to_name` reads from its
command line; elsewhere the server chooses.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from activerag.serving.llamacpp import is_llama_server

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


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def cache_ram_off(argv: list[bytes]) -> bool:
    """Whether the llama-server command line ARGV (a /proc cmdline) turns its prompt cache in
    host memory off (`--cache-ram 0`, or `-cram 0`; the last one given counts)."""
    flags = [a.replace(b"_", b"-") if a.startswith(b"--") else a for a in argv]  # as llama.cpp
    values = [argv[i + 1] for i in range(len(argv) - 1) if flags[i] in (b"--cache-ram", b"-cram")]
    return bool(values) and values[-1].strip() == b"0"


def safe_to_name(base_url: str, proc: Path = Path("/proc")) -> bool:
    """Whether requests to BASE_URL may name their slot: the llama-server on this machine (PROC's
    command lines) that serves its port does so with `--cache-ram 0` (see the module); every
    one, where several say that port."""
    url = urlsplit(base_url)
    if url.hostname not in LOOPBACK or url.port is None:
        return False
    found = []
    for entry in sorted(proc.glob("[0-9]*/cmdline")):  # one order, whatever the listing
        try:
            argv = entry.read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if is_llama_server(argv, url.port):
            found.append(cache_ram_off(argv))
    return bool(found) and all(found)


def naming(base_url: str, name_slots: bool | None) -> bool:
    """Whether a client sends BASE_URL's requests to slots by name: as NAME_SLOTS says, or
    where that is safe (`safe_to_name`) when it says nothing."""
    if name_slots is not None:
        return name_slots
    if safe_to_name(base_url):
        return True
    log.info("%s: not naming llama-server's slots (not a server on this machine started with "
             "--cache-ram 0); the server chooses them", base_url)
    return False


async def slot_count(http: httpx.AsyncClient, base_url: str) -> int | None:
    """llama-server's slots (/props total_slots); None if it does not say."""
    try:
        resp = await http.get(base_url.removesuffix("/v1") + "/props")
        resp.raise_for_status()
        count = resp.json().get("total_slots")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return count if isinstance(count, int) and count > 0 else None
