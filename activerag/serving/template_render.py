"""The requests a served chat template is learned with, and what a server's answers mean.

A server renders a conversation in its template (vLLM: `POST /tokenize` with `messages` and
`continue_final_message`, then `/detokenize`; llama-server: `POST /apply-template`). Thinking
is turned off in that request (`chat_template_kwargs: {"enable_thinking": false}`, read by
both servers): llama-server versions before continue_final_message refused a continued
assistant turn under a thinking template (Qwen3, DeepSeek-R1) with "Assistant response prefill
is incompatible with enable_thinking", and this one opens the reply with an empty think block.
A server that says the model has no template (vLLM's 400, or no render endpoint at all) is
told apart from one that refuses this conversation (`Refused`, its reason in one line).

llama-server never says a model has no template: for a GGUF without `tokenizer.chat_template`
it renders its built-in ChatML (`CHATML_FALLBACK`, which GET /props shows as `chat_template`,
with the GGUF's `model_path`). That is told apart from a ChatML the model was given by reading
the GGUF's header where the path is a file here, else by the model's vocabulary: ChatML's
`<|im_start|>` is then not one of its tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from activerag.errors import ActiveRagError
from activerag.serving.dialect import LLAMA_CPP, detokenized, engine_of, tokenize_body
from activerag.serving.gguf_header import gguf_metadata

NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}
"""Sent with every render: a thinking template renders a reply without thinking."""
CHATML_FALLBACK = (
    "{%- for message in messages -%}\n"
    "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "  {{- '<|im_start|>assistant\n' -}}\n"
    "{%- endif -%}")
"""llama.cpp's built-in ChatML (common/chat.cpp, CHATML_TEMPLATE_SRC), exactly as GET /props
shows it: what llama-server renders for a GGUF that carries no template, and for
`--chat-template chatml`."""
_NO_TEMPLATE = re.compile(r"no chat template|chat template is no longer allowed|"
                          r"does not define one|chat_template is not set", re.IGNORECASE)
"""How vLLM (and transformers under it) say a model has no chat template."""


class Refused(Exception):
    """The server refused to render the conversation; the message is its reason, one line."""


def reason(resp: httpx.Response) -> str:
    """The error message of RESP in one line (either server's error shape), with its status."""
    try:
        body: Any = resp.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    message = (error.get("message") if isinstance(error, dict) else error) or \
        (body.get("message") if isinstance(body, dict) else None) or resp.text
    one_line = " ".join(str(message).split())
    return f"{one_line[:300] or resp.reason_phrase} (HTTP {resp.status_code})"


class TemplateServer:
    """The few requests a layout is learned with."""

    def __init__(self, base_url: str, model: str, http: httpx.AsyncClient) -> None:
        self.v1 = base_url.rstrip("/")
        self.root = self.v1.removesuffix("/v1")
        self.model, self.http = model, http
        self.engine = ""

    async def find_engine(self) -> None:
        """Ask /v1/models which server this is."""
        resp = await self.http.get(self.v1 + "/models")
        resp.raise_for_status()
        self.engine = engine_of(resp.json().get("data", []))

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(self.root + path, json={"model": self.model, **body})

    async def render(self, messages: list[dict[str, str]]) -> str | None:
        """The server's rendering of MESSAGES continuing the last; None when the model has no
        template (or the server renders none); Refused when it refuses this conversation."""
        if self.engine == LLAMA_CPP:
            resp = await self.post("/apply-template", {"messages": messages, **NO_THINKING})
        else:
            resp = await self.post("/tokenize", {"messages": messages, **NO_THINKING,
                                                 "add_generation_prompt": False,
                                                 "continue_final_message": True})
        if resp.status_code == 404 or (resp.status_code == 400
                                       and _NO_TEMPLATE.search(reason(resp))):
            return None
        if resp.status_code != 200:
            raise Refused(reason(resp))
        if self.engine == LLAMA_CPP:
            return str(resp.json()["prompt"])
        return await self.text(resp.json()["tokens"])

    async def ids(self, text: str, special: bool = False, parse: bool = True) -> list[int]:
        """TEXT's token ids (SPECIAL: with the BOS a completion adds; PARSE False: special
        tokens' texts read as plain text, which llama-server alone can be asked)."""
        body = tokenize_body(self.engine, text, special)
        resp = await self.post("/tokenize", body if parse else {**body, "parse_special": False})
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
        that stay one token after a letter (an ordinary token merges or splits). llama-server
        also reads a text with its special tokens as plain characters when asked: there, one
        that stays one token even so is a word of the vocabulary ("|>" of Gemma's), not a
        marker, unless none splits (a server that does not hear the ask)."""
        found: list[str] = []
        for piece in pieces:
            for token in await self.ids(piece):
                text = await self.text([token])
                if len(text.strip()) < 2 or text.strip().isalnum() or text in found:
                    continue
                if (await self.ids("x" + text))[-1:] == [token]:
                    found.append(text)
        if self.engine != LLAMA_CPP:
            return tuple(found)
        split = [m for m in found if len(await self.ids(m, parse=False)) > 1]
        return tuple(split or found)

    async def fell_back(self) -> bool:
        """Whether llama-server renders its built-in ChatML because the model's GGUF carries
        no chat template (not because it was told to, for a model that knows ChatML)."""
        resp = await self.http.get(self.root + "/props")
        props = resp.json() if resp.status_code == 200 else {}
        if props.get("chat_template") not in (CHATML_FALLBACK, "chatml"):
            return False
        own = gguf_has_template(props.get("model_path"))
        if own is not None:
            return not own
        return len(await self.ids("<|im_start|>")) != 1


def gguf_has_template(path: object) -> bool | None:
    """Whether the GGUF file at PATH carries a chat template (tokenizer.chat_template in its
    header); None when PATH is not a GGUF file that can be read here."""
    if not isinstance(path, str) or not path or not Path(path).is_file():
        return None
    try:
        return "tokenizer.chat_template" in gguf_metadata(Path(path))
    except (ActiveRagError, OSError):
        return None
