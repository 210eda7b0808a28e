"""prompt_format auto against the templates that broke it: a thinking template (llama-server
refused the continued reply unless thinking is off), Mistral v0.3's (the system text opens the
last user message), a GGUF without a template (llama-server silently renders its built-in
ChatML) and llama-server's built-in gemma. Fake servers render as the real ones do; each
layout learned must lay out a conversation as the server itself renders it. Tokens are
characters, special tokens and the vocabulary's longer words one each."""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from activerag.cli import parser
from activerag.errors import ActiveRagError
from activerag.serving import templates
from activerag.serving.templates import ChatLayout, layout_of, learn
from activerag.testing.fake_lm import QuietHandler, serving

MODEL = "fake-model"
LLAMA_CHATML = (
    "{%- for message in messages -%}\n"
    "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "  {{- '<|im_start|>assistant\n' -}}\n"
    "{%- endif -%}")
"""What llama-server's GET /props answers as chat_template for a GGUF without one
(CHATML_TEMPLATE_SRC in llama.cpp's common/chat.cpp, llama-cpp-python 0.3.36)."""
PREFILL_REFUSED = "Assistant response prefill is incompatible with enable_thinking."
"""llama-server's refusal of a continued reply under a thinking template (before it took
continue_final_message), as a 500."""


class Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Vocab:
    """Characters, SPECIALS (one id each; characters when special tokens are not parsed) and
    WORDS, ordinary tokens of more than one character (one id each)."""

    def __init__(self, specials: Sequence[str], bos: str | None = None,
                 words: Sequence[str] = ()) -> None:
        self.names = {t: 10 + i for i, t in enumerate([*specials, *words])}
        self.specials, self.bos = set(specials), bos
        self._special = re.compile("(" + "|".join(map(re.escape, specials)) + ")")
        self._word = re.compile("|".join(map(re.escape, words)) + "|." if words else ".",
                                re.DOTALL)

    def ids(self, text: str, parse: bool = True, add_bos: bool = False) -> list[int]:
        out = [self.names[self.bos]] if add_bos and self.bos else []
        for part in self._special.split(text) if parse else [text]:
            if parse and part in self.specials:
                out.append(self.names[part])
                continue
            out += [self.names.get(w, 1000 + ord(w[0])) for w in self._word.findall(part)]
        return out

    def text(self, ids: Sequence[int]) -> str:
        back = {i: t for t, i in self.names.items()}
        return "".join(back.get(i) or chr(i - 1000) for i in ids)


Render = Callable[[dict[str, Any]], str]


class _Fake(QuietHandler):
    engine = "llama.cpp"
    render: Render
    vocab: Vocab
    props: dict[str, Any] | None = None
    renders: list[dict[str, Any]]
    """The body of every render request."""

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"code": status, "message": message,
                                      "type": "invalid_request_error"}})

    def do_GET(self) -> None:
        if self.path == "/props" and self.props is not None:
            self._json(200, self.props)
        elif self.path.rstrip("/") == "/v1/models":
            owner = {"owned_by": "llamacpp"} if self.engine == "llama.cpp" else {}
            self._json(200, {"object": "list", "data": [{"id": MODEL, **owner}]})
        else:
            self._error(404, "File Not Found")

    def do_POST(self) -> None:
        body, v, llama = self._body(), self.vocab, self.engine == "llama.cpp"
        if (self.path, llama) in (("/apply-template", True), ("/tokenize", False)) and \
                "messages" in body:
            self.renders.append(body)
            try:
                prompt = type(self).render(body)
            except Refusal as refusal:
                self._error(refusal.status, refusal.message)
                return
            self._json(200, {"prompt": prompt} if llama else {"tokens": v.ids(prompt)})
        elif self.path == "/tokenize" and llama:
            self._json(200, {"tokens": v.ids(body["content"], body.get("parse_special", True),
                                             body.get("add_special", False))})
        elif self.path == "/tokenize":
            self._json(200, {"tokens": v.ids(body["prompt"],
                                             add_bos=body["add_special_tokens"])})
        elif self.path == "/detokenize":
            self._json(200, {"content" if llama else "prompt": v.text(body["tokens"])})
        else:
            self._error(404, "File Not Found")


def fake(render: Render, vocab: Vocab, props: dict[str, Any] | None = None,
         engine: str = "llama.cpp") -> tuple[Any, type[_Fake]]:
    """A fake server rendering with RENDER (its base URL as a context), and its handler class,
    which keeps the requests."""
    handler = type("Handler", (_Fake,), {"render": staticmethod(render), "vocab": vocab,
                                         "props": props, "engine": engine, "renders": []})
    return serving(handler), handler


def _chatml(messages: Sequence[dict[str, str]]) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def messages(system: str, turns: Sequence[tuple[str, str]], reply: str) -> list[dict[str, str]]:
    """A real conversation as a chat request sends it, the reply to be continued last."""
    out = [{"role": "system", "content": system}]
    for user, assistant in turns:
        out.append({"role": "user", "content": user})
        if assistant:
            out.append({"role": "assistant", "content": assistant})
    return [*out, {"role": "assistant", "content": reply}]


CONVERSATIONS = [("Answer briefly.", [("Who wrote Emma?", "")], "Jane"),
                 ("Answer briefly.", [("Capital of France?", "Paris."),
                                      ("Who wrote Emma?", "")], "Jane")]


def server_renders(render: Render, layout: ChatLayout, bos: str = "", closing: str = "") -> None:
    """LAYOUT lays out each of CONVERSATIONS as RENDER does (less its BOS, and the CLOSING it
    writes after a reply that it does not continue)."""
    for system, turns, reply in CONVERSATIONS:
        body = {"messages": messages(system, turns, reply)}
        own = render(body).removeprefix(bos).removesuffix(closing)
        assert layout.render(system, turns, reply) == own


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    templates.forget()
    yield
    templates.forget()


# 1. Thinking templates

QWEN3 = Vocab(["<|im_start|>", "<|im_end|>", "<think>", "</think>"])


def qwen3_on_llama_server(hears_kwargs: bool = True) -> Render:
    """Qwen3's template as llama-server (b6xxx) continued a reply: refused while thinking is on
    (HEARS_KWARGS False: an older one that reads no chat_template_kwargs), else the messages
    before the reply, the reply's opening with thinking off, and the reply's text."""
    def render(body: dict[str, Any]) -> str:
        *history, reply = body["messages"]
        if not (hears_kwargs and
                (body.get("chat_template_kwargs") or {}).get("enable_thinking") is False):
            raise Refusal(500, PREFILL_REFUSED)
        return _chatml(history) + "<|im_start|>assistant\n<think>\n\n</think>\n\n" + \
            reply["content"]
    return render


def test_a_thinking_template_is_learned_with_thinking_off():
    render = qwen3_on_llama_server()
    context, handler = fake(render, QWEN3)
    with context as url:
        layout = asyncio.run(layout_of(url, MODEL))
    assert layout is not None
    assert layout.reply_open == "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert layout.markers == ("<|im_start|>", "<|im_end|>", "<think>", "</think>")
    server_renders(lambda body: render({**body, "chat_template_kwargs": {
        "enable_thinking": False}}), layout)
    assert handler.renders and all(b["chat_template_kwargs"] == {"enable_thinking": False}
                                   for b in handler.renders)


def test_a_server_that_still_refuses_is_an_error_with_its_reason_not_plain(caplog):
    context, _ = fake(qwen3_on_llama_server(hears_kwargs=False), QWEN3)
    with context as url, pytest.raises(ActiveRagError) as caught:
        asyncio.run(layout_of(url, MODEL))
    message = str(caught.value)
    assert PREFILL_REFUSED in message and "HTTP 500" in message and "\n" not in message
    assert "--prompt-format chatml or plain" in message
    assert "laid out plain" not in caplog.text


GEMMA = Vocab(["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"], bos="<bos>",
              words=["|>"])
"""Gemma 3's vocabulary in small: its control tokens, and "|>", an ordinary token of it (one
token after a letter, as a special token is)."""


def gemma_jinja_on_vllm(body: dict[str, Any]) -> str:
    """Gemma's own Jinja template (no system role) as vLLM continues the last message."""
    if any(m["role"] == "system" for m in body["messages"]):
        raise Refusal(400, "System role not supported")
    turns = [f"<start_of_turn>{'model' if m['role'] == 'assistant' else m['role']}\n"
             f"{m['content']}<end_of_turn>\n" for m in body["messages"]]
    return "<bos>" + "".join(turns).removesuffix("<end_of_turn>\n")


def test_vllm_is_asked_without_thinking_and_a_refused_system_role_is_folded():
    """vLLM's /tokenize takes chat_template_kwargs too; a template that refuses the system role
    (a 400 that is not "no template") is learned with the system text in the first user turn,
    as llama.cpp folds it."""
    context, handler = fake(gemma_jinja_on_vllm, GEMMA, engine="vllm")
    with context as url:
        layout = asyncio.run(learn(url, MODEL))
    assert len(handler.renders) == 2
    assert all(b.get("chat_template_kwargs") == {"enable_thinking": False}
               for b in handler.renders)
    assert layout is not None and layout.system_end == "\n\n"
    assert layout.markers == ("<start_of_turn>", "<end_of_turn>", "<bos>")
    server_renders(folded(gemma_jinja_on_vllm), layout, bos="<bos>")


def folded(render: Render) -> Render:
    """RENDER given the system text at the start of the first user message."""
    def fold(body: dict[str, Any]) -> str:
        system, user, *rest = body["messages"]
        first = {"role": "user", "content": f"{system['content']}\n\n{user['content']}"}
        return render({"messages": [first, *rest]})
    return fold


# 2. A template that moves the system text into the last user message

MISTRAL = Vocab(["<s>", "</s>", "[INST]", "[/INST]"], bos="<s>")


def mistral_v03_on_llama_server(body: dict[str, Any]) -> str:
    """Mistral v0.3's template as llama-server continues a reply: the messages before the reply
    rendered (the system text opens the last user message of them: `loop.last and
    system_message is defined`), then the reply's text."""
    *history, reply = body["messages"]
    system = history.pop(0)["content"] if history[0]["role"] == "system" else None
    out = "<s>"
    for i, m in enumerate(history):
        if m["role"] == "user":
            opening = f"{system}\n\n" if system is not None and i == len(history) - 1 else ""
            out += f"[INST] {opening}{m['content']}[/INST]"
        else:
            out += " " + m["content"].strip() + "</s>"
    return out + reply["content"]


def test_a_template_with_the_system_text_in_the_last_user_message_is_learned():
    context, _ = fake(mistral_v03_on_llama_server, MISTRAL)
    with context as url:
        layout = asyncio.run(learn(url, MODEL))
    assert layout is not None and layout.system_last
    assert layout.markers == ("[INST]", "[/INST]", "</s>", "<s>")
    server_renders(mistral_v03_on_llama_server, layout, bos="<s>")


def test_a_template_that_loses_a_message_names_the_flag_where_it_is():
    """The error names --prompt-format on the commands that have it (not on serve)."""
    def last_turn_only(body: dict[str, Any]) -> str:
        *_, user, reply = body["messages"]
        return f"<s>[INST] {user['content']}[/INST]{reply['content']}"

    context, _ = fake(last_turn_only, MISTRAL)
    with context as url, pytest.raises(ActiveRagError, match="does not keep every message") \
            as caught:
        asyncio.run(learn(url, MODEL))
    commands = next(a for a in parser()._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    named = [c for c in commands if re.search(rf"\b{c}\b", str(caught.value))]
    assert "--prompt-format chatml or plain" in str(caught.value) and named
    assert all("--prompt-format" in commands[c]._option_string_actions for c in named), named


# 3. A GGUF without a template, and llama-server's built-in ones


def chatml_on_llama_server(body: dict[str, Any]) -> str:
    """llama.cpp's built-in ChatML, the reply continued after its generation prompt."""
    *history, reply = body["messages"]
    return _chatml(history) + "<|im_start|>assistant\n" + reply["content"]


def gemma_built_in(body: dict[str, Any]) -> str:
    """llama.cpp's built-in gemma (--no-jinja --chat-template gemma): the system text opens the
    first user turn, and every turn is closed (that route continues nothing)."""
    out, system = "", ""
    for m in body["messages"]:
        if m["role"] == "system":
            system += m["content"].strip()
            continue
        role = "model" if m["role"] == "assistant" else m["role"]
        out += f"<start_of_turn>{role}\n"
        if system and role != "model":
            out, system = out + system + "\n\n", ""
        out += m["content"].strip() + "<end_of_turn>\n"
    return out


def gguf_file(path: Path, template: str | None) -> str:
    """A GGUF header (no tensors) with TEMPLATE as its tokenizer.chat_template, or none."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_tokenizer_model("llama")
    if template is not None:
        writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


@pytest.mark.parametrize("where", ["gguf here", "gguf elsewhere"])
def test_a_gguf_without_a_template_is_laid_out_plain_said_once(caplog, tmp_path, where):
    """/props shows the built-in ChatML; the GGUF's header (where it is a file here) or the
    vocabulary (ChatML's <|im_start|> is no token of Gemma's) says it is a fallback."""
    path = gguf_file(tmp_path / "gemma.gguf", None) if where == "gguf here" \
        else "/models/elsewhere/gemma.gguf"
    props = {"chat_template": LLAMA_CHATML, "model_path": path}
    context, _ = fake(chatml_on_llama_server, GEMMA, props)
    with context as url, caplog.at_level("WARNING"):
        assert asyncio.run(layout_of(url, MODEL)) is None
        assert asyncio.run(layout_of(url, MODEL)) is None
    notices = [r.message for r in caplog.records if "laid out plain" in r.message]
    assert len(notices) == 1 and "built-in ChatML" in notices[0], notices


def test_chatml_given_to_a_model_of_its_own_template_is_kept_and_its_markers_are_tokens(
        tmp_path):
    """`--chat-template chatml` for a GGUF that has a template of its own: ChatML is what it
    was told, and learned; but "|>" (Gemma splits <|im_start|> into "<", "|", ... "|>") is an
    ordinary token of its vocabulary, not a marker: the one that was seen came of the wrong
    template."""
    props = {"chat_template": LLAMA_CHATML,
             "model_path": gguf_file(tmp_path / "gemma.gguf", "{{ messages }}")}
    context, _ = fake(chatml_on_llama_server, GEMMA, props)
    with context as url:
        layout = asyncio.run(learn(url, MODEL))
    assert layout is not None and layout.start == "<|im_start|>system\n"
    assert layout.markers == ("<bos>",)


def test_a_built_in_template_by_name_is_learned_with_the_models_own_markers(tmp_path):
    """`--chat-template gemma` on the GGUF without a template: /props shows the name, and
    the layout is Gemma's, its markers Gemma's control tokens."""
    props = {"chat_template": "gemma", "model_path": gguf_file(tmp_path / "g.gguf", None)}
    context, _ = fake(gemma_built_in, GEMMA, props)
    with context as url:
        layout = asyncio.run(layout_of(url, MODEL))
    assert layout is not None
    assert (layout.start, layout.system_end, layout.user_end) == (
        "<start_of_turn>user\n", "\n\n", "<end_of_turn>\n<start_of_turn>model\n")
    assert layout.markers == ("<start_of_turn>", "<end_of_turn>", "<bos>")
    server_renders(gemma_built_in, layout, closing="<end_of_turn>\n")


def test_forget_makes_the_next_layout_asked_of_the_server_again():
    context, handler = fake(chatml_on_llama_server, GEMMA, {"chat_template": "chatml-ish"})
    with context as url:
        first = asyncio.run(layout_of(url, MODEL))
        assert asyncio.run(layout_of(url, MODEL)) == first and len(handler.renders) == 1
        templates.forget()
        assert asyncio.run(layout_of(url, MODEL)) == first and len(handler.renders) == 2


def test_a_gguf_header_is_read_for_its_template_and_anything_else_is_unknown(tmp_path):
    from activerag.serving.template_render import gguf_has_template

    assert gguf_has_template(gguf_file(tmp_path / "with.gguf", "{{ messages }}")) is True
    assert gguf_has_template(gguf_file(tmp_path / "without.gguf", None)) is False
    whole = (tmp_path / "with.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(whole[:40])
    (tmp_path / "text.gguf").write_text("not a GGUF file")
    for path in (tmp_path / "cut.gguf", tmp_path / "text.gguf", tmp_path, tmp_path / "none"):
        assert gguf_has_template(str(path)) is None
    assert gguf_has_template(None) is None
