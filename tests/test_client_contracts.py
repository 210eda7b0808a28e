"""The exact request bodies the LM clients send (issue #38), read off a fake vLLM that records
them: the text client's greedy stream with the alternatives it was made to ask, its stops and
bias; the token client's samples (one request with n, or n requests whose seeds count up from
the given one), its top-k steps and its echo scoring."""

from __future__ import annotations

import pytest

from activerag.serving.lm import VLLMClient
from activerag.serving.token_lm import VLLMTokens
from activerag.testing.fake_lm import Backend, backend


def completions(b: Backend) -> list[dict]:
    return [body for path, body in b.requests if path.endswith("/completions")]


async def test_the_text_client_streams_a_greedy_completion_asking_its_alternatives():
    b = Backend()
    with backend(b) as url:
        lm = VLLMClient(url, top_logprobs=7)
        await lm.generate("Where?", max_tokens=3, stop=["\n\n"], logit_bias={12: 100.0})
    [body] = completions(b)
    assert body == {"model": "fake-model", "prompt": "Where?", "max_tokens": 3,
                    "temperature": 0.0, "logprobs": 7, "stream": True,
                    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
                    "stop": ["\n\n"], "include_stop_str_in_output": True,
                    "logit_bias": {"12": 100.0}}


async def test_a_text_client_asking_no_alternatives_sends_no_logprobs_field():
    b = Backend()
    with backend(b) as url:
        await VLLMClient(url, top_logprobs=0).generate("Where?", max_tokens=2)
    [body] = completions(b)
    assert "logprobs" not in body and "stop" not in body and "logit_bias" not in body


@pytest.mark.parametrize(("seed", "seeds"), [(7, [7, 8, 9]), (None, [None, None, None])])
async def test_separate_samples_are_n_requests_whose_seeds_count_up(seed, seeds):
    b = Backend()
    with backend(b) as url:
        tokens = VLLMTokens(url, "fake-model")
        out = await tokens.sample("Why?", 3, 5, temperature=0.7, top_p=0.9, top_k=40,
                                  seed=seed, separate=True, stop=["\n"])
    bodies = completions(b)
    assert sorted(bodies, key=lambda x: x["seed"] or 0) == [
        {"model": "fake-model", "prompt": "Why?", "max_tokens": 5, "temperature": 0.7,
         "top_p": 0.9, "top_k": 40, "stop": ["\n"], "n": 1, "seed": s} for s in seeds]
    assert len(out.texts) == 3 and out.requests == 3


async def test_one_sample_request_carries_n_and_the_seed_itself():
    b = Backend()
    with backend(b) as url:
        out = await VLLMTokens(url, "fake-model").sample("Why?", 4, 5, temperature=1.0,
                                                         top_p=1.0, top_k=-1, seed=3)
    assert completions(b) == [{"model": "fake-model", "prompt": "Why?", "max_tokens": 5,
                               "temperature": 1.0, "top_p": 1.0, "top_k": -1, "n": 4,
                               "seed": 3}]
    assert len(out.texts) == 4 and out.requests == 1


async def test_a_step_asks_the_top_alternatives_as_token_ids_and_scoring_echoes():
    b = Backend()
    with backend(b) as url:
        tokens = VLLMTokens(url, "fake-model")
        await tokens.steps([5, 6], 2, 20)
        await tokens.score([5, 6], [7])
    step, scored = completions(b)
    assert step == {"model": "fake-model", "prompt": [5, 6], "max_tokens": 2,
                    "temperature": 0.0, "logprobs": 20, "return_tokens_as_token_ids": True}
    assert scored == {"model": "fake-model", "prompt": [5, 6, 7], "max_tokens": 0,
                      "echo": True, "logprobs": 1, "return_tokens_as_token_ids": True}


async def test_a_server_that_lists_no_context_length_gives_no_window():
    """A window of 0 or 1 token would refuse every prompt: unknown is None, and the fit checks
    then leave the prompt to the server."""
    with backend(Backend(lacks={"context_length"})) as url:
        assert await VLLMTokens(url, "fake-model").context_window() is None
    with backend(Backend()) as url:
        assert await VLLMTokens(url, "fake-model").context_window() == 2048


def test_replicas_without_a_model_all_ask_for_the_first_answering_replica_s():
    """The replicas of one base_url serve one model: left unnamed, it is the first answering
    replica's, asked of every replica (a second serving other weights is refused by name)."""
    from activerag.nodes.parts import replicated

    with backend(Backend(model="first-model")) as one, \
            backend(Backend(model="other-model")) as two:
        lm = replicated(f"{one},{two}", "")
    assert [c.model for c in lm.clients] == ["first-model", "first-model"]
