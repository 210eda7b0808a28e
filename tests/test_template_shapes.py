"""Template learning (serving/templates.py) for every shape of chat template, on each engine:
with a system role; without one, refused or silently dropped (the system text then opens the
first user message, `conversation(system=False)`); one that moves the system text into the
last user message (Mistral v0.3); with a BOS the completion endpoint adds itself (left out of
the layout) or one only the template writes (kept); with a closing tag written after the reply
(never part of the layout); none at all. The whole ChatLayout is compared, markers included,
and the layout must lay a conversation out as the template itself does."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from test_engine_bodies import CHATML, ENGINES, MODEL, RENDER_BODY, Engine, Render, chatml, serve

from activerag.errors import ActiveRagError
from activerag.serving import templates
from activerag.serving.dialect import LLAMA_CPP
from activerag.serving.templates import ChatLayout


def gemma(messages: list[dict[str, str]]) -> str | None:
    """No system role (a system message is refused), a BOS at the start of its text."""
    if any(m["role"] == "system" for m in messages):
        return None
    return "<bos>" + "".join(
        f"<start_of_turn>{'model' if m['role'] == 'assistant' else 'user'}\n{m['content']}"
        "<end_of_turn>\n" for m in messages)


def mistral(messages: list[dict[str, str]]) -> str:
    """A system message dropped without a word; `</s>` closes every reply."""
    return "<s>" + "".join(f"[INST] {m['content']} [/INST]" if m["role"] == "user"
                           else f"{m['content']}</s>" for m in messages if m["role"] != "system")


def mistral_v3(messages: list[dict[str, str]]) -> str:
    """The system text opens the last user message (Mistral v0.3's template)."""
    system = "".join(f"{m['content']}\n\n" for m in messages if m["role"] == "system")
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return "<s>" + "".join(
        f"[INST] {system if i == last else ''}{m['content']}[/INST]" if m["role"] == "user"
        else f"{m['content']}</s>" for i, m in enumerate(messages) if m["role"] != "system")


def llama3(messages: list[dict[str, str]]) -> str:
    return "<|begin_of_text|>" + "".join(
        f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content']}<|eot_id|>"
        for m in messages)


def phi3(messages: list[dict[str, str]]) -> str:
    """A closing tag after every message, and another after the whole conversation."""
    return "".join(f"<|{m['role']}|>\n{m['content']}<|end|>\n" for m in messages) + \
        "<|endoftext|>"


GEMMA = ("<start_of_turn>", "<end_of_turn>")
LLAMA3 = ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
PHI3 = ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>")


@dataclass(frozen=True)
class Shape:
    """A template as one fake server serves it, and the layout that must be learned of it."""

    template: Render
    want: ChatLayout
    bos: str = ""
    """The BOS the completion endpoint puts before every prompt itself."""
    specials: tuple[str, ...] = ()
    system_role: bool = True
    """Whether the template keeps a system message (else it opens the first user message)."""

    def engine(self, engine: str) -> Engine:
        return Engine(engine, template=self.template, bos=self.bos, specials=self.specials)


def layout(*pieces: str, markers: tuple[str, ...], system_last: bool = False) -> ChatLayout:
    return ChatLayout(MODEL, *pieces, markers=markers, system_last=system_last)


SHAPES = {
    "system_role": Shape(chatml, layout(
        "<|im_start|>system\n", "<|im_end|>\n<|im_start|>user\n",
        "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n<|im_start|>user\n",
        "<|im_end|>\n<|im_start|>assistant\n", markers=CHATML), specials=CHATML),
    "no_system_role": Shape(gemma, layout(
        "<start_of_turn>user\n", "\n\n", "<end_of_turn>\n<start_of_turn>model\n",
        "<end_of_turn>\n<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n",
        markers=(*GEMMA, "<bos>")), bos="<bos>", specials=GEMMA, system_role=False),
    "system_dropped": Shape(mistral, layout(
        "[INST] ", "\n\n", " [/INST]", "</s>[INST] ", " [/INST]", markers=("</s>", "<s>")),
        bos="<s>", specials=("</s>",), system_role=False),
    "system_in_the_last_user_message": Shape(mistral_v3, layout(
        "[INST] ", "\n\n", "[/INST]", "</s>[INST] ", "[/INST]", markers=("</s>", "<s>"),
        system_last=True), bos="<s>", specials=("</s>",)),
    "bos_added_by_the_endpoint": Shape(llama3, layout(
        "<|start_header_id|>system<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        markers=(*LLAMA3, "<|begin_of_text|>")), bos="<|begin_of_text|>", specials=LLAMA3),
    "bos_in_the_template_only": Shape(gemma, layout(
        "<bos><start_of_turn>user\n", "\n\n", "<end_of_turn>\n<start_of_turn>model\n",
        "<end_of_turn>\n<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n",
        markers=("<bos>", *GEMMA)), specials=("<bos>", *GEMMA), system_role=False),
    "closing_tag_after_the_reply": Shape(phi3, layout(
        "<|system|>\n", "<|end|>\n<|user|>\n", "<|end|>\n<|assistant|>\n",
        "<|end|>\n<|user|>\n", "<|end|>\n<|assistant|>\n",
        markers=("<|system|>", "<|end|>", "<|user|>", "<|assistant|>")), specials=PHI3),
}
CASES = [(shape, engine) for shape in SHAPES for engine in ENGINES]


async def learned(shape: Shape, engine: str) -> tuple[ChatLayout | None, Engine]:
    fake = shape.engine(engine)
    with serve(fake) as url:
        found = await templates.learn(url, MODEL)
    return found, fake


@pytest.mark.parametrize("name,engine", CASES)
async def test_the_whole_layout_is_learned_for_every_shape_on_each_engine(name, engine):
    found, _ = await learned(SHAPES[name], engine)
    assert found == SHAPES[name].want


@pytest.mark.parametrize("name,engine", CASES)
async def test_a_template_without_a_system_role_is_asked_again_with_the_system_text_folded(
        name, engine):
    shape = SHAPES[name]
    _, fake = await learned(shape, engine)
    path, body = RENDER_BODY[engine]
    folded = {**body, "messages": templates.conversation(system=False)}
    renders = [b for b in fake.bodies(path) if "messages" in b]
    assert renders == ([body] if shape.system_role else [body, folded])
    assert folded["messages"][0] == {"role": "user", "content": "QXSYSTEMQX\n\nQXUSERONEQX"}


SYSTEM, TURNS, PREFIX = "Be brief.", [("Who is Ann?", "A poet."), ("Where?", "")], "In"


@pytest.mark.parametrize("name", SHAPES)
async def test_the_layout_renders_a_conversation_as_the_template_does(name):
    """Less the BOS the endpoint adds, and cut after the reply's start (what follows it, a
    closing tag, is for a finished reply)."""
    shape = SHAPES[name]
    (u1, a1), (u2, _) = TURNS
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": u1}] \
        if shape.system_role else [{"role": "user", "content": f"{SYSTEM}\n\n{u1}"}]
    rendered = shape.template([*first, {"role": "assistant", "content": a1},
                               {"role": "user", "content": u2},
                               {"role": "assistant", "content": PREFIX}])
    assert rendered is not None
    rendered = rendered.removeprefix(shape.bos)
    want = rendered[:rendered.rindex(PREFIX) + len(PREFIX)]
    assert shape.want.render(SYSTEM, TURNS, PREFIX) == want


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_server_without_a_template_has_no_layout(engine):
    """vLLM says so; llama-server renders its built-in ChatML, which GET /props shows and the
    vocabulary gives away (no <|im_start|> token)."""
    fake = Engine(engine)
    with serve(fake) as url:
        assert await templates.learn(url, MODEL) is None
    path, body = RENDER_BODY[engine]
    assert [b for b in fake.bodies(path) if "messages" in b] == [body]
    assert ("GET /props" in fake.paths()) == (engine == LLAMA_CPP)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_template_that_refuses_both_conversations_is_an_error_with_its_reason(engine):
    with serve(Engine(engine, template=lambda messages: None)) as url:
        with pytest.raises(ActiveRagError, match="refused to lay out a conversation.*"
                                                 "Conversation roles must alternate"):
            await templates.learn(url, MODEL)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_template_that_loses_a_message_is_refused_by_name(engine):
    def no_assistant(messages: list[dict[str, str]]) -> str:
        return chatml([m for m in messages if m["role"] != "assistant" or m is messages[-1]])

    with serve(Engine(engine, template=no_assistant, specials=CHATML)) as url:
        with pytest.raises(ActiveRagError, match="--prompt-format chatml or plain"):
            await templates.learn(url, MODEL)
