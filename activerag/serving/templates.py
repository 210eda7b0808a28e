"""A served model's own chat template, learned from its server once and kept as a layout.

The methods' prompts are a system message, (user, assistant) turns and the start of the reply,
sent as one completion prompt. `prompt_format="auto"` lays them out in the served model's own
template: the server renders one conversation whose messages are sentinels (vLLM:
`POST /tokenize` with `messages` and `continue_final_message`, then `/detokenize`;
llama-server: `POST /apply-template`), and the text between the sentinels is the template's
own. Every later prompt is those pieces around the real messages: one render per server and
model, however many prompts. The special tokens that the pieces hold (tested on the server:
a token that stays one token after a letter, and not plain text of the vocabulary) are the
markers neutralised in retrieved text.

A template that moves the system text into the last user message (Mistral v0.3) is cut as
such; one without a system role is rendered again with the system text in the first user
message. A model without a template (vLLM says so; llama-server renders its built-in ChatML
for a GGUF without one, told apart in template_render) is laid out plain, said once; a
server that refuses the conversation is an error with its reason, never a silent plain.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from activerag.errors import ActiveRagError, LMServerUnreachable
from activerag.serving.dialect import LLAMA_CPP
from activerag.serving.security import auth_headers
from activerag.serving.template_render import Refused, TemplateServer

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
    system_last: bool = False
    """The system message opens the last user message, not the first (Mistral v0.3's
    template: `[INST] system\\n\\nuser[/INST]` in the last turn alone)."""

    def render(self, system: str, turns: Sequence[tuple[str, str]], reply_prefix: str) -> str:
        """SYSTEM, the (user, assistant) TURNS (the last one's assistant empty: the reply) and
        REPLY_PREFIX in this template."""
        opening = [system, self.system_end]
        out = [self.start, *([] if self.system_last and turns else opening)]
        for i, (user, assistant) in enumerate(turns):
            last = i == len(turns) - 1
            out += [*(opening if last and self.system_last else []), user]
            if last and not assistant:
                break
            out += [self.user_end, assistant, self.assistant_end]
        out += [self.reply_open, reply_prefix]
        return "".join(out)


def cut(rendered: str, model: str, bos: str = "") -> ChatLayout:
    """The layout in RENDERED, the sentinel conversation as the template laid it out, cut where
    the reply's text ends (as vLLM's continue_final_message cuts); BOS, the text the completion
    endpoint puts before every prompt itself, is dropped from its start. The system text opens
    the conversation or, in a template that moves it there, the last user message."""
    s, u1, a1, u2, r = SENTINELS
    at = {sentinel: rendered.find(sentinel) for sentinel in SENTINELS}
    if -1 < at[s] < at[u1] < at[a1] < at[u2] < at[r]:
        order = SENTINELS
    elif -1 < at[u1] < at[a1] < at[s] < at[u2] < at[r]:
        order = (u1, a1, s, u2, r)
    else:
        raise ActiveRagError(f"the chat template of {model!r} does not keep every message "
                             "of a conversation in order; choose --prompt-format chatml or "
                             "plain (on ask, eval or sweep)")
    # the text before each sentinel; what a template writes after the reply (a closing tag)
    # is dropped: the reply goes on
    before = {order[0]: rendered[:at[order[0]]]} | {
        b: rendered[at[a] + len(a):at[b]] for a, b in itertools.pairwise(order)}
    start = before[order[0]].removeprefix(bos) if bos else before[order[0]]
    if order == SENTINELS:
        return ChatLayout(model, start, before[u1], before[a1], before[u2], before[r])
    return ChatLayout(model, start, before[u2], before[a1], before[s], before[r],
                      system_last=True)


def conversation(system: bool = True) -> list[dict[str, str]]:
    """The sentinel conversation (SYSTEM False: the system text opens the first user message,
    for a template that has no system role)."""
    s, u1, a1, u2, r = SENTINELS
    first = [{"role": "system", "content": s}, {"role": "user", "content": u1}] if system \
        else [{"role": "user", "content": f"{s}\n\n{u1}"}]
    return [*first, {"role": "assistant", "content": a1}, {"role": "user", "content": u2},
            {"role": "assistant", "content": r}]


async def learn(base_url: str, model: str, timeout: float = 60.0) -> ChatLayout | None:
    """The layout of MODEL's template as the server at BASE_URL renders it; None when it has
    no chat template."""
    learned = await _learn(base_url, model, timeout)
    return learned if isinstance(learned, ChatLayout) else None


async def _learn(base_url: str, model: str, timeout: float) -> ChatLayout | str:
    """The layout, or why there is none."""
    async with httpx.AsyncClient(timeout=timeout, headers=auth_headers(),
                                 limits=httpx.Limits(max_keepalive_connections=0)) as http:
        server = TemplateServer(base_url, model, http)
        await server.find_engine()
        layout = await _rendered_layout(server)
        if layout is None:
            return "the server renders none for it"
        if server.engine == LLAMA_CPP and await server.fell_back():
            return ("its GGUF carries none, and llama-server would lay it out in its built-in "
                    "ChatML; --prompt-format chatml to use that anyway")
        bos = await server.bos()
        if bos:
            layout = dataclasses.replace(layout, start=layout.start.removeprefix(bos))
        pieces = (layout.start, layout.system_end, layout.user_end, layout.assistant_end,
                  layout.reply_open, bos)
        markers = await server.markers([p for p in pieces if p])
        return dataclasses.replace(layout, markers=markers)


async def _rendered_layout(server: TemplateServer) -> ChatLayout | None:
    """The layout of the sentinel conversation as SERVER renders it, with a system message
    or, where that is refused or loses a message, with the system text in the first user
    message; None when the model has no template."""
    refusal, failure = "", ActiveRagError("")
    for system in (True, False):
        try:
            rendered = await server.render(conversation(system))
        except Refused as exc:
            refusal = refusal or str(exc)
            continue
        if rendered is None:
            return None
        try:
            return cut(rendered, server.model)
        except ActiveRagError as exc:
            failure = exc
    if refusal:
        raise ActiveRagError(
            f"the server at {server.v1} refused to lay out a conversation in the chat template "
            f"of {server.model!r}: {refusal}; choose --prompt-format chatml or plain (on ask, "
            "eval or sweep)")
    raise failure


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
                    learned = await _learn(base_url, model, 60.0)
                except httpx.HTTPError as exc:
                    # a server that does not answer is unreachable, as for any other request
                    error = (LMServerUnreachable if isinstance(exc, httpx.TransportError)
                             else ActiveRagError)
                    raise error(
                        f"could not ask the server at {base_url} for {model!r}'s chat template "
                        f"({exc!r}); start it, or choose --prompt-format chatml or plain"
                    ) from exc
                if isinstance(learned, str):
                    log.warning("%s at %s has no chat template (%s): its prompts are laid out "
                                "plain (prompt_format auto)", model, base_url, learned)
                _layouts[key] = learned if isinstance(learned, ChatLayout) else None
    return _layouts[key]


def forget(base_url: str | None = None) -> None:
    """Drop the layouts learned (of BASE_URL only, when given): tests, and a server started
    anew there, perhaps with another engine or template."""
    for key in [k for k in _layouts if base_url is None or k[0] == base_url.rstrip("/")]:
        del _layouts[key]
        _locks.pop(key, None)
    if base_url is None:
        _locks.clear()
