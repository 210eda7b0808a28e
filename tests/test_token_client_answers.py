"""What VLLMTokens (REPLUG's and FB-RAG's token client) makes of a server's answers, over a
fake vLLM (issue #38: these branches were run by no unit test): a refusal names the status and
the server's words, text without top logprobs is refused with the flag to set, and an empty
answer is an empty round that says whether the output ended."""

import asyncio

import pytest

from activerag.errors import ActiveRagError, NoLogprobs
from activerag.serving.token_lm import VLLMTokens
from activerag.testing.fake_lm import Backend, backend


def ask(b: Backend, call):
    with backend(b) as url:
        return asyncio.run(call(VLLMTokens(url, "fake-model")))


def test_a_refused_request_names_the_status_and_the_server_s_words():
    with pytest.raises(ActiveRagError, match=r"rejected the request \(400\): .*echo is not "
                                             r"supported"):
        ask(Backend(lacks={"echo"}), lambda lm: lm.score([1, 2], [3]))


def test_text_without_top_logprobs_is_refused_with_the_flag_to_set():
    with pytest.raises(NoLogprobs, match="REPLUG needs them.*--max-logprobs"):
        ask(Backend(lacks={"logprobs"}), lambda lm: lm.steps([1, 2], 4, 5))


def test_an_empty_answer_is_an_empty_round():
    steps = ask(Backend(reply=""), lambda lm: lm.steps([1, 2], 4, 5))
    assert list(steps.positions) == [] and steps.ended is False  # the fake ends on "length"
