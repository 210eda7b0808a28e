"""Errors of the LM client against the real server (and one against a refusing port)."""

import math

import pytest

from activerag.errors import LMServerUnreachable, ModelMismatch, PromptTooLong
from activerag.serving.lm import VLLMClient
from activerag.serving.token_lm import VLLMTokens

pytestmark = pytest.mark.integration


def test_unreachable_server_names_the_fix():
    with pytest.raises(LMServerUnreachable, match="activerag serve"):
        VLLMClient("http://127.0.0.1:9/v1")


async def test_model_mismatch(vllm_url):
    client = VLLMClient(vllm_url, model="no-such-model")
    with pytest.raises(ModelMismatch, match="no-such-model"):
        client.check()
    with pytest.raises(ModelMismatch, match="does not serve"):
        await client.generate("Hello", max_tokens=2)


async def test_prompt_longer_than_the_context(vllm_url):
    client = VLLMClient(vllm_url)
    with pytest.raises(PromptTooLong, match="lower k"):
        await client.generate("word " * 5000, max_tokens=8)


async def test_a_prompt_that_fills_the_window_exactly_is_too_long(vllm_url):
    # vLLM cuts max_tokens to the room left, 0 here, and refuses that with "max_tokens must
    # be at least 1": the same PromptTooLong, so IRCoT drops an exemplar and retries
    import httpx

    window = httpx.get(vllm_url + "/models").json()["data"][0]["max_model_len"]
    tokens = VLLMTokens(vllm_url, "SmolLM2-135M-Instruct")
    words = window
    for _ in range(5):
        text = "word " * words
        count = len(await tokens.tokenize(text))
        if count == window:
            break
        words -= count - window
    assert count == window
    with pytest.raises(PromptTooLong, match="lower k"):
        await VLLMClient(vllm_url).generate(text, max_tokens=8)


async def test_the_token_client_names_the_same_causes_and_fixes(vllm_url):
    tokens = VLLMTokens(vllm_url, "SmolLM2-135M-Instruct")
    with pytest.raises(PromptTooLong, match="lower k"):
        await tokens.sample("word " * 5000, 1, 4, temperature=1.0, top_p=1.0, top_k=-1, seed=0)
    with pytest.raises(LMServerUnreachable, match="activerag serve"):
        await VLLMTokens("http://127.0.0.1:9/v1", "SmolLM2-135M-Instruct").tokenize("Hello")


async def test_real_generation_carries_logprobs_and_offsets(vllm_url):
    client = VLLMClient(vllm_url)
    gen = await client.generate("<|im_start|>user\nCount: one, two,<|im_end|>\n"
                                "<|im_start|>assistant\n", max_tokens=12)
    assert gen.tokens
    assert gen.generated_tokens == len(gen.tokens)
    assert "".join(t.text for t in gen.tokens) == gen.text
    assert [t.start for t in gen.tokens] == sorted(t.start for t in gen.tokens)
    assert all(0.0 < t.prob <= 1.0 for t in gen.tokens)


async def test_stop_string_trims_tokens_by_offset(vllm_url):
    client = VLLMClient(vllm_url)
    gen = await client.generate("1, 2, 3, 4,", max_tokens=30, stop=[" 7"])
    assert gen.text == " 5, 6,"
    assert gen.stop_reason == " 7"
    assert "".join(t.text for t in gen.tokens) == gen.text


async def test_the_client_returns_twenty_alternatives_per_token_when_asked(vllm_url):
    gen = await VLLMClient(vllm_url, top_logprobs=20).generate("1, 2, 3, 4,", max_tokens=6)
    assert gen.tokens and all(len(t.top) >= 20 for t in gen.tokens)
    assert all(sum(math.exp(v) for v in t.top) <= 1.0 + 1e-6 for t in gen.tokens)
    plain = await VLLMClient(vllm_url).generate("1, 2, 3, 4,", max_tokens=6)
    assert all(t.top == () for t in plain.tokens)
