"""The methods against a real llama.cpp server (llama-server, built by the code users run,
serving SmolLM2's GGUF as shipped): its logprob shape, /tokenize fields, client-found stops,
slots and context errors, and every method the doctor says runs there."""

from dataclasses import replace

import pytest

from activerag.cli import main
from activerag.context import FlareContext
from activerag.demo import load_demo_questions
from activerag.errors import PromptTooLong
from activerag.graphs.fb_rag import build_fb_rag_graph
from activerag.graphs.registry import METHODS, method
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.serving.dialect import LLAMA_CPP
from activerag.serving.lm import VLLMClient
from activerag.serving.probe import probe
from activerag.serving.server import Launch
from activerag.serving.token_lm import VLLMTokens

pytestmark = pytest.mark.integration
QUESTIONS = [q["question"] for q in load_demo_questions()]
ON_LLAMA = ["none", "single", "flare", "flare_explicit", "flare_combined", "flare_instruct",
            "self_ask", "previous_window", "replug", "replug_token", "replug_vote", "single_k10",
            "flare_replug", "ircot", "gate_entropy_max", "flare_etc", "dragin_lite", "app",
            "adaptive_rag_prompt", "flare_seakr", "gate_lexsim"]
"""Every family the doctor says runs on llama-server: the FLARE family, REPLUG's token and
agree ensembles, IRCoT, a gate, ETC, DRAGIN-lite, SeaKR-lite, Adaptive-RAG and the app."""


def test_the_probe_finds_llama_server_and_every_ability_but_echo(llama_url):
    found = probe(llama_url, fresh=True)
    assert found.engine == LLAMA_CPP and found.context_length == 4096
    assert found.top_logprobs == 20
    assert found.found == {"completions", "stream", "logprobs", "top_logprobs", "n",
                           "token_ids", "tokenize", "logit_bias", "chat"}
    assert "echo" in found.why
    assert found.most_n == Launch().parallel  # its slots (serve's default --parallel) cap n


def test_doctor_lists_every_method_but_the_echo_ones_at_the_defaults(llama_url, capsys):
    """At `serve`'s default slots every method runs but replug_rescore, which scores prompts
    (echo); on 5 slots gate_lexsim's 10 samples in one request were refused too."""
    assert main(["doctor", llama_url]) == 0
    out = capsys.readouterr().out
    assert f"({LLAMA_CPP})" in out.splitlines()[0]
    assert f"methods that run here ({len(METHODS) - 1} of {len(METHODS)})" in out
    stopped = out.split("methods that do not: ")[1].strip().split("; ")
    assert stopped == ["replug_rescore (needs echo)"]


async def test_the_client_reads_its_logprobs_and_finds_its_stops(llama_url):
    lm = VLLMClient(llama_url, top_logprobs=5)
    gen = await lm.generate("One, two, three, four,", max_tokens=24, stop=[" seven"])
    assert gen.stop_reason == " seven" and gen.finished and gen.complete
    assert gen.text and " seven" not in gen.text
    assert all(t.logprob <= 0 and len(t.top) == 5 for t in gen.tokens)
    assert "".join(t.text for t in gen.tokens) == gen.text
    assert [t.start for t in gen.tokens] == sorted(t.start for t in gen.tokens)
    assert await lm.token_ids(" seven") == await VLLMTokens(llama_url, lm.model).tokenize(
        " seven")


async def test_token_level_requests_read_ids_and_refuse_scoring(llama_url):
    tokens = VLLMTokens(llama_url, VLLMClient(llama_url).model)
    ids = await tokens.tokenize("The capital of France is")
    steps = await tokens.steps(ids, 3, 5)
    assert len(steps.positions) == 3 and all(len(p.top) == 5 for p in steps.positions)
    assert steps.positions[0].token in steps.positions[0].top
    assert await tokens.detokenize(ids) == "The capital of France is"
    assert await tokens.context_window() == 4096
    samples = await tokens.sample("Name a colour:", 3, 4, temperature=1.0, top_p=1.0, top_k=-1,
                                  seed=0)
    assert len(samples.texts) == 3 and samples.requests == 1
    with pytest.raises(Exception, match="echo"):
        await tokens.score(ids[:2], ids[2:])


async def test_a_prompt_longer_than_a_slot_names_the_flags_to_raise(llama_url):
    lm = VLLMClient(llama_url)
    with pytest.raises(PromptTooLong, match="--parallel"):
        await lm.generate("word " * 5000, max_tokens=4)


@pytest.mark.parametrize("name", ON_LLAMA)
async def test_method_runs_on_llama_server(name, llama_url, demo_store):
    ctx = FlareContext(base_url=llama_url, store_dir=str(demo_store), max_answer_tokens=64)
    graph, ctx = method(name, ctx)
    if name.startswith("replug"):
        ctx = replace(ctx, k=3)
    out = await graph.ainvoke({"question": QUESTIONS[4]}, context=ctx)
    assert out["answer"].strip()
    assert out["lm_calls"] >= 1
    if name in ("single", "single_k10", "previous_window", "ircot", "replug", "replug_token"):
        assert out["retrieval_steps"] >= 1  # these retrieve whatever the model writes


async def test_fb_rag_samples_and_reads_on_llama_server(llama_url, demo_store):
    context = " ".join(f"Paragraph {i}. Thouthis Driastax was born in the city of Gepu."
                       if i == 7 else f"Paragraph {i}. Zaezum Works makes lamps."
                       for i in range(40))
    ctx = FBRagContext(light_base_url=llama_url, base_url=llama_url, samples=3,
                       recall_words=150, read_words=100)
    out = await build_fb_rag_graph().ainvoke(
        {"question": "In which city was Thouthis Driastax born?", "context": context},
        context=ctx)
    assert len(out["samples"]) == 3 and out["lm_calls"] == 2  # one request with n=3
    assert out["answer"] and "\n" not in out["answer"]
