"""prompt_format auto learns the served model's own chat template from its server (issue #38,
survivors of the random mutants): a fake vLLM or llama-server renders a ChatML template that
opens with a BOS, and the layout learned cuts the template at its messages, leaves out the BOS
the completion endpoint adds itself, and finds the template's special tokens; a model without a
template is laid out plain. Tokens are characters, special tokens one each."""

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from activerag.context import ServingContext
from activerag.nodes.parts import Parts
from activerag.serving import templates
from activerag.serving.templates import ChatLayout, layout_of, learn
from activerag.testing.fake_lm import QuietHandler, serving

BOS = "<s>"
SPECIAL = {BOS: 1, "<|im_start|>": 2, "<|im_end|>": 3}
SPLIT = re.compile("(" + "|".join(map(re.escape, SPECIAL)) + ")")
MODEL = "fake-chat"


def _ids(text: str, parse_special: bool = True) -> list[int]:
    """TEXT's ids (PARSE_SPECIAL False: special tokens' texts are characters, as llama-server
    reads them when asked)."""
    if not parse_special:
        return [1000 + ord(c) for c in text]
    return [i for part in SPLIT.split(text) if part
            for i in ([SPECIAL[part]] if part in SPECIAL else [1000 + ord(c) for c in part])]


def _text(ids: list[int]) -> str:
    names = {i: s for s, i in SPECIAL.items()}
    return "".join(names.get(i) or chr(i - 1000) for i in ids)


def _chatml(messages: list[dict[str, str]]) -> str:
    """The template: BOS, then each message; the last one continued (no end)."""
    turns = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return BOS + "".join(turns).removesuffix("<|im_end|>\n")


class _Templated(QuietHandler):
    engine = "vllm"
    has_template = True

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "code": status}})

    def do_GET(self) -> None:
        owner = "llamacpp" if self.engine == "llama.cpp" else "vllm"
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, "Not Found")
            return
        self._json(200, {"object": "list", "data": [{"id": MODEL, "owned_by": owner}]})

    def do_POST(self) -> None:
        body: dict[str, Any] = self._body()
        llama = self.engine == "llama.cpp"
        if self.path == "/tokenize" and "messages" in body and not llama:
            if not self.has_template:
                self._error(400, "this model has no chat template")
            else:
                self._json(200, {"tokens": _ids(_chatml(body["messages"]))})
        elif self.path == "/tokenize":
            text, special = ((body["content"], body["add_special"]) if llama
                             else (body["prompt"], body["add_special_tokens"]))
            parse = body.get("parse_special", True) if llama else True
            self._json(200, {"tokens": [SPECIAL[BOS]] * special + _ids(text, parse)})
        elif self.path == "/detokenize":
            self._json(200, {"content" if llama else "prompt": _text(body["tokens"])})
        elif self.path == "/apply-template" and llama and self.has_template:
            self._json(200, {"prompt": _chatml(body["messages"])})
        else:
            self._error(404, "Not Found")


def _server(engine: str, has_template: bool = True):
    handler = type("Handler", (_Templated,), {"engine": engine, "has_template": has_template})
    return serving(handler)


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    templates.forget()
    yield
    templates.forget()


CHATML = ChatLayout(MODEL, "<|im_start|>system\n", "<|im_end|>\n<|im_start|>user\n",
                    "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n<|im_start|>user\n",
                    "<|im_end|>\n<|im_start|>assistant\n",
                    markers=("<|im_start|>", "<|im_end|>", BOS))


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp"])
def test_the_served_template_is_learned_without_the_bos_the_server_adds(engine):
    with _server(engine) as url:
        layout = asyncio.run(learn(url, MODEL))
    assert layout == CHATML
    assert layout.render("S", [("Q", "")], "A") == \
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA"


def test_a_model_without_a_template_is_laid_out_plain(caplog):
    with _server("vllm", has_template=False) as url:
        assert asyncio.run(learn(url, MODEL)) is None
        assert asyncio.run(layout_of(url, MODEL)) is None
    assert "has no chat template" in caplog.text


def test_prompt_format_auto_gives_the_nodes_the_served_layout_or_plain():
    for has_template, expected in ((True, CHATML), (False, "plain")):
        templates.forget()
        with _server("vllm", has_template) as url:
            ctx = ServingContext(base_url=url, model=MODEL, prompt_format="auto")
            assert asyncio.run(Parts().layout_for(ctx, model=MODEL)) == expected


def test_auto_with_an_lm_of_its_own_is_its_layout_or_chatml_said_once(caplog, monkeypatch):
    """A graph given an LM (a scripted one) has no server to learn a template from: auto is the
    LM's own chat_layout where it carries one, else ChatML, and the warning is given once."""
    from activerag.nodes import parts as parts_module
    from activerag.testing.scripted import ScriptedLM

    monkeypatch.setattr(parts_module, "_warned", set())
    ctx = ServingContext(prompt_format="auto")
    with caplog.at_level("WARNING"):
        assert asyncio.run(Parts(lm=ScriptedLM([])).layout_for(ctx)) == "chatml"
        assert asyncio.run(Parts(lm=ScriptedLM([])).layout_for(ctx)) == "chatml"
    assert sum("lays out ChatML" in r.message for r in caplog.records) == 1
    own = ScriptedLM([])
    own.chat_layout = "plain"  # type: ignore[attr-defined]
    assert asyncio.run(Parts(lm=own).layout_for(ctx)) == "plain"
    assert asyncio.run(Parts(lm=own).layout_for(ctx, fmt="chatml")) == "chatml"
