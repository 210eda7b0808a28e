"""prompt_format auto for Gemma 3 270M, whose GGUF carries no chat template: served on
llama.cpp with its built-in gemma template, auto learns Gemma's turns and markers (Gemma's own
control tokens) and `activerag ask` answers; served with no template, llama-server silently
renders its built-in ChatML, and auto lays the prompts out plain, said once, instead of
learning ChatML's `<|im_start|>` for a model that has no such token. On vLLM, a Gemma template
file written here (Gemma's documented turns, the system text opening the first user turn) is
learned the same way."""

import asyncio
import json
import logging
from pathlib import Path

import pytest

from activerag.cli import main
from activerag.demo import load_demo_questions
from activerag.serving import server
from activerag.serving.catalogue import CATALOGUE
from activerag.serving.lm import VLLMClient
from activerag.serving.templates import ChatLayout, layout_of
from activerag.testing import processes as realprocs

pytestmark = pytest.mark.integration
GEMMA = CATALOGUE["gemma-3-270m"]
WINDOW = 4096
QUESTION = load_demo_questions()[4]["question"]
GEMMA_TOKENS = {"<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"}
GEMMA_JINJA = (
    "{{ bos_token }}{% set ns = namespace(system='') %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.system = m['content'] + '\\n\\n' %}"
    "{% else %}{% set role = 'model' if m['role'] == 'assistant' else 'user' %}"
    "{{ '<start_of_turn>' + role + '\\n' }}"
    "{% if role == 'user' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{{ m['content'] + '<end_of_turn>\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}")
"""Gemma's turns as its model card documents them (`<start_of_turn>user`, `<start_of_turn>model`,
each closed by `<end_of_turn>`), with no system role: a system text opens the first user turn."""


async def gemmas_layout(url: str) -> ChatLayout:
    """The layout auto learns at URL: Gemma's turns, its markers Gemma's own tokens, each one
    token on the server."""
    client = VLLMClient(url)
    layout = await layout_of(url, client.model)
    assert layout is not None
    assert layout.start == "<start_of_turn>user\n" and layout.system_end == "\n\n"
    assert layout.reply_open == "<end_of_turn>\n<start_of_turn>model\n"
    assert {"<start_of_turn>", "<end_of_turn>"} <= set(layout.markers) <= GEMMA_TOKENS
    for marker in layout.markers:
        assert len(await client.token_ids(marker)) == 1, marker
    return layout


def answers(url: str, store: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`activerag ask --method single --prompt-format auto` at URL: it returns 0 and an
    answer."""
    capsys.readouterr()
    rc = main(["ask", "--json", "--method", "single", "--prompt-format", "auto",
               "--max-answer-tokens", "32", "--base-url", url, "--store", str(store), QUESTION])
    out = capsys.readouterr()
    assert rc == 0, out.err
    answer = json.loads(out.out)["answer"]
    assert isinstance(answer, str) and answer.strip()
    return answer


def test_gemma_on_llama_cpp_with_its_built_in_template(demo_store, capsys):
    launch = server.Launch("llama.cpp", parallel=1, chat_template="gemma")
    with realprocs.own_server(model=GEMMA, max_model_len=WINDOW, launch=launch) as url:
        asyncio.run(gemmas_layout(url))
        answers(url, demo_store, capsys)


async def test_gemma_on_llama_cpp_without_a_template_is_laid_out_plain(caplog):
    launch = server.Launch("llama.cpp", parallel=1)
    with realprocs.own_server(model=GEMMA, max_model_len=WINDOW, launch=launch) as url:
        model = VLLMClient(url).model
        with caplog.at_level(logging.WARNING):
            assert await layout_of(url, model) is None
            assert await layout_of(url, model) is None
    notices = [r.message for r in caplog.records if "laid out plain" in r.message]
    assert len(notices) == 1 and "built-in ChatML" in notices[0], notices


def test_gemma_on_vllm_with_a_template_file(demo_store, tmp_path, capsys):
    template = tmp_path / "gemma.jinja"
    template.write_text(GEMMA_JINJA)
    launch = server.Launch("vllm", chat_template=str(template))
    with realprocs.own_server(model=GEMMA, max_model_len=WINDOW, launch=launch) as url:
        asyncio.run(gemmas_layout(url))
        answers(url, demo_store, capsys)
