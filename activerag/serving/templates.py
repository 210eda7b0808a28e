"""A served model's own chat template, learned from its server once and kept as a layout.

The methods' prompts are a system message, (user, assistant) turns and the start of the reply,
sent as one completion prompt. `prompt_format="auto"` lays them out in the served model's own
template: the server renders one conversation whose messages are sentinels (vLLM:
`POST /tokenize` with `messages` and `continue_final_message`, then `/detokenize`;
llama-server: `POST /apply-template`), and the text between the sentinels is the template's
own. Every later prompt is those pieces around the real messages: one render per server and
model, however many prompts. The special tokens that the pieces hold (tested on the server:
a token that stays one token after a letter) are the markers neutralised in retrieved text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from activerag.errors import ActiveRagError
from activerag.serving.dialect import LLAMA_CPP, detokenized, engine_of, tokenize_body
from activerag.serving.security import auth_headers

log = logging.getLogger(__name__)
SENTINELS = ("QXSYSTEMQX", "QXUSERONEQX", "QXASSISTANTQX", "QXUSERTWOQX", "QXREPLYQX")
"""The contents of the conversation rendered once: system, user, assistant, user, the reply
so far."""


@dataclass(frozen=True)
class ChatLayout:
    """One model's chat template cut where its messages go."""

    model: str
    start: str
    """Before the system message (a BOS the server adds itself is left out)."""
    system_end: str
    """Between the system message and the first user message."""
    user_end: str
    """Between a user message and the assistant's answer to it."""
    assistant_end: str
    """Between an assistant message and the next user message."""
    reply_open: str
    """Between the last user message and the reply being continued."""
    markers: tuple[str, ...] = ()
    """The model's special tokens in these pieces (and its BOS and EOS), as text."""

    def render(self, system: str, turns: Sequence[tuple[str, str]], reply_prefix: str) -> str:
        """SYSTEM, the (user, assistant) TURNS (the last one's assistant empty: the reply) and
        REPLY_PREFIX in this template."""
        out = [self.start, system, self.system_end]
        for i, (user, assistant) in enumerate(turns):
            out.append(user)
            if i == len(turns) - 1 and not assistant:
                break
            out += [self.user_end, assistant, self.assistant_end]
        out += [self.reply_open, reply_prefix]
        return "".join(out)


def cut(rendered: str, model: str, bos: str = "") -> ChatLayout:
    """The layout in RENDERED, the sentinel conversation as the template laid it out, cut where
    the reply's text ends (as vLLM's continue_final_message cuts); BOS, the text the completion
    endpoint puts before every prompt itself, is dropped from its start."""
    at, end = [], 0
    for sentinel in SENTINELS:
        found = rendered.find(sentinel, end)
        if found < 0:
            raise ActiveRagError(f"the chat template of {model!r} does not keep every message "
                                 "of a conversation; serve it with --prompt-format chatml or "
                                 "plain")
        at.append(found)
        end = found + len(sentinel)
    pieces = [rendered[:at[0]]] + [rendered[at[i] + len(SENTINELS[i]):at[i + 1]]
                                   for i in range(len(at) - 1)]
    # what a template writes after the reply (a closing tag) is dropped: the reply goes on
    start = pieces[0].removeprefix(bos) if bos else pieces[0]
    return ChatLayout(model, start, pieces[1], pieces[2], pieces[3], pieces[4])


def conversation(system: bool = True) -> list[dict[str, str]]:
    """The sentinel conversation (SYSTEM False: the system text opens the first user message,
    for a template that has no system role)."""
    s, u1, a1, u2, r = SENTINELS
    first = [{"role": "system", "content": s}, {"role": "user", "content": u1}] if system \
        else [{"role": "user", "content": f"{s}\n\n{u1}"}]
    return [*first, {"role": "assistant", "content": a1}, {"role": "user", "content": u2},
            {"role": "assistant", "content": r}]


class _Server:
    """The few requests a layout is learned with."""

    def __init__(self, base_url: str, model: str, http: httpx.AsyncClient) -> None:
        self.v1 = base_url.rstrip("/")
        self.root = self.v1.removesuffix("/v1")
        self.model, self.http = model, http
        self.engine = ""

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(self.root + path, json={"model": self.model, **body})

    async def render(self, messages: list[dict[str, str]]) -> str | None:
        """The server's rendering of MESSAGES continuing the last; None when it has no
        template (or refuses this conversation)."""
        if self.engine == LLAMA_CPP:
            resp = await self.post("/apply-template", {"messages": messages})
            return str(resp.json()["prompt"]) if resp.status_code == 200 else None
        resp = await self.post("/tokenize", {"messages": messages,
                                             "add_generation_prompt": False,
                                             "continue_final_message": True})
        if resp.status_code != 200:
            return None
        return await self.text(resp.json()["tokens"])

    async def ids(self, text: str, special: bool = False) -> list[int]:
        resp = await self.post("/tokenize", tokenize_body(self.engine, text, special))
        resp.raise_for_status()
        return [int(t) for t in resp.json()["tokens"]]

    async def text(self, ids: Sequence[int]) -> str:
        resp = await self.post("/detokenize", {"tokens": list(ids)})
        resp.raise_for_status()
        return detokenized(resp.json())

    async def bos(self) -> str:
        """What the completion endpoint puts before a prompt itself (a BOS), as text."""
        plain, special = await self.ids("a"), await self.ids("a", special=True)
        extra = special[:len(special) - len(plain)] if special[-len(plain):] == plain else []
        return await self.text(extra) if extra else ""

    async def markers(self, pieces: Sequence[str]) -> tuple[str, ...]:
        """The special tokens in PIECES: tokens of two or more characters, not all letters,
        that stay one token after a letter (an ordinary token merges or splits)."""
        found: list[str] = []
        for piece in pieces:
            for token in await self.ids(piece):
                text = await self.text([token])
                if len(text.strip()) < 2 or text.strip().isalnum() or text in found:
                    continue
                if (await self.ids("x" + text))[-1:] == [token]:
                    found.append(text)
        return tuple(found)


async def learn(base_url: str, model: str, timeout: float = 60.0) -> ChatLayout | None:
    """The layout of MODEL's template as the server at BASE_URL renders it; None when it has
    no chat template."""
    async with httpx.AsyncClient(timeout=timeout, headers=auth_headers(),
                                 limits=httpx.Limits(max_keepalive_connections=0)) as http:
        server = _Server(base_url, model, http)
        resp = await http.get(server.v1 + "/models")
        resp.raise_for_status()
        server.engine = engine_of(resp.json().get("data", []))
        rendered = await server.render(conversation())
        if rendered is None or SENTINELS[0] not in rendered:
            rendered = await server.render(conversation(system=False))
        if rendered is None:
            return None
        bos = await server.bos()
        layout = cut(rendered, model, bos)
        pieces = (layout.start, layout.system_end, layout.user_end, layout.assistant_end,
                  layout.reply_open, bos)
        markers = await server.markers([p for p in pieces if p])
        return ChatLayout(**{**layout.__dict__, "markers": markers})


_layouts: dict[tuple[str, str], ChatLayout | None] = {}
_locks: dict[tuple[str, str], asyncio.Lock] = {}


async def layout_of(base_url: str, model: str) -> ChatLayout | None:
    """MODEL's layout at BASE_URL, learned once per process; None (said once) when the model
    has no chat template: its prompts are then laid out plain."""
    key = (base_url.rstrip("/"), model)
    if key not in _layouts:
        lock = _locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in _layouts:
                try:
                    _layouts[key] = await learn(base_url, model)
                except httpx.HTTPError as exc:
                    raise ActiveRagError(
                        f"could not ask the server at {base_url} for {model!r}'s chat template "
                        f"({exc!r}); start it, or choose --prompt-format chatml or plain"
                    ) from exc
                if _layouts[key] is None:
                    log.warning("%s at %s has no chat template: its prompts are laid out "
                                "plain (prompt_format auto)", model, base_url)
    return _layouts[key]


def forget() -> None:
    """Drop the layouts learned (tests; a server restarted with another template)."""
    _layouts.clear()
    _locks.clear()
