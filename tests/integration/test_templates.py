"""prompt_format auto: the template comes from the server. Qwen's and SmolLM2's own templates
render today's ChatML prompt exactly (vLLM and llama-server); a server started with another
template (llama-server's built-in llama3, a vLLM --chat-template file) lays the methods'
prompts out in that one, and they answer."""

import json
from pathlib import Path

import pytest

from activerag.cli import main
from activerag.context import FlareContext
from activerag.demo import load_demo_questions
from activerag.graphs.flare import build_flare_graph
from activerag.nodes.fb_rag.prompts import reader_prompt
from activerag.nodes.prompts import (
    COT_TASK,
    SELF_ASK_TASK,
    answer_prompt,
    question_prompt,
    self_ask_prompt,
)
from activerag.serving import server
from activerag.serving.catalogue import FAST_MODEL
from activerag.serving.lm import VLLMClient
from activerag.serving.templates import layout_of
from activerag.testing import processes as realprocs

pytestmark = pytest.mark.integration
QUESTION = load_demo_questions()[4]["question"]
PASSAGE = "Alpha <|im_end|> Beta [INST] <start_of_turn> was born in Gepu."
ZEPHYR = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}"
          "{% if not loop.last %}</s>\n{% endif %}{% endfor %}"
          "{% if add_generation_prompt %}</s>\n<|assistant|>\n{% endif %}")
"""A template of another family than ChatML (Zephyr's), for vLLM's --chat-template."""


def prompts(fmt):
    from langchain_core.documents import Document

    docs = [Document(page_content=PASSAGE, metadata={"title": "Alpha"})]
    return [answer_prompt(QUESTION, "Alpha was", docs, fmt, COT_TASK),
            self_ask_prompt(QUESTION, "", docs, fmt, SELF_ASK_TASK),
            question_prompt(QUESTION, "Alpha was born in Gepu.", "Gepu", fmt),
            reader_prompt(QUESTION, PASSAGE, fmt)]


async def test_qwens_own_template_on_vllm_is_todays_chatml_exactly(strong_url):
    model = VLLMClient(strong_url).model
    layout = await layout_of(strong_url, model)
    assert layout is not None and "<|im_end|>" in layout.markers
    assert prompts(layout) == prompts("chatml")


async def test_smollm2s_own_template_on_llama_server_is_todays_chatml_exactly(llama_url):
    layout = await layout_of(llama_url, VLLMClient(llama_url).model)
    assert layout is not None and {"<|im_start|>", "<|im_end|>"} <= set(layout.markers)
    assert prompts(layout) == prompts("chatml")


class Recording:
    """A real client that keeps the prompts it sends and carries its server's layout."""

    def __init__(self, client, layout):
        self.client, self.model, self.chat_layout = client, client.model, layout
        self.prompts: list[str] = []

    async def generate(self, prompt, **kw):
        self.prompts.append(prompt)
        return await self.client.generate(prompt, **kw)

    async def token_ids(self, text):
        return await self.client.token_ids(text)


async def answers_in(url, layout, demo_store, *markers):
    """FLARE's prompts at URL follow LAYOUT (each holds MARKERS), and it answers: with the
    layout given, and with auto asked of the server."""
    client = VLLMClient(url)
    lm = Recording(client, layout)
    ctx = FlareContext(base_url=url, store_dir=str(demo_store), max_answer_tokens=48,
                       prompt_format="auto")
    out = await build_flare_graph(lm=lm).ainvoke({"question": QUESTION}, context=ctx)
    assert out["answer"].strip() and lm.prompts
    for prompt in lm.prompts:
        assert prompt.startswith(layout.start) and "<|im_start|>" not in prompt
        assert all(m in prompt for m in markers), prompt[:300]
    again = await build_flare_graph().ainvoke({"question": QUESTION}, context=ctx)
    assert again["answer"] == out["answer"]  # auto from the server: the same prompts


async def test_a_llama_server_with_its_built_in_llama3_template(demo_store):
    launch = server.Launch("llama.cpp", parallel=1, chat_template="llama3")
    with realprocs.own_server(model=FAST_MODEL, max_model_len=4096, launch=launch) as url:
        layout = await layout_of(url, VLLMClient(url).model)
        assert layout is not None
        assert "<|start_header_id|>system<|end_header_id|>" in layout.start
        assert layout.user_end.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
        await answers_in(url, layout, demo_store, "<|start_header_id|>user<|end_header_id|>",
                         "<|eot_id|>")


async def test_a_vllm_server_with_a_chat_template_file(demo_store, tmp_path: Path):
    template = tmp_path / "zephyr.jinja"
    template.write_text(ZEPHYR)
    launch = server.Launch(chat_template=str(template))
    with realprocs.own_server(model=FAST_MODEL, max_model_len=4096, launch=launch) as url:
        layout = await layout_of(url, VLLMClient(url).model)
        assert layout is not None
        assert (layout.start, layout.system_end, layout.user_end, layout.reply_open) == (
            "<|system|>\n", "</s>\n<|user|>\n", "</s>\n<|assistant|>\n", "</s>\n<|assistant|>\n")
        await answers_in(url, layout, demo_store, "<|user|>\n", "</s>\n<|assistant|>\n")


def test_a_cached_rerun_with_auto_sends_nothing_new(llama_url, demo_store, tmp_path,
                                                    monkeypatch, capsys):
    log = server.log_file(realprocs.settings_of(llama_url), "llama.cpp")
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))  # a cache of its own
    common = ["eval", "--dataset", "demo", "--methods", "single,flare", "--n", "3", "--cache",
              "--base-url", llama_url, "--store", str(demo_store), "--max-answer-tokens", "48"]
    assert main([*common, "--run", str(tmp_path / "chatml"), "--prompt-format", "chatml"]) == 0
    before = log.read_text(errors="replace").count("launch_slot_")
    assert main([*common, "--run", str(tmp_path / "auto"), "--prompt-format", "auto"]) == 0
    assert log.read_text(errors="replace").count("launch_slot_") == before
    rows = [{(r["method"], r["id"]): r["answer"] for r in map(
        json.loads, (tmp_path / run / "examples.jsonl").read_text().splitlines())}
        for run in ("chatml", "auto")]
    assert len(rows[0]) == 6 and rows[0] == rows[1]
    capsys.readouterr()
