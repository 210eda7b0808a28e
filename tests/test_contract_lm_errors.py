"""Every failure of an LM request, whichever client raised it (openai's errors or httpx's),
becomes an error that names its cause and what to do (serving/lm_errors.py, translate): a
table over the status codes and transport failures, and a table of the context-window
rejections the engines word differently (issue #38)."""

import re

import httpx
import openai
import pytest

from activerag.errors import (
    ActiveRagError,
    LMServerUnreachable,
    ModelMismatch,
    NoLogprobs,
    PromptTooLong,
)
from activerag.serving.lm_errors import LMServerError, too_long_error, translate

URL = "http://127.0.0.1:9/v1"
REQUEST = httpx.Request("POST", URL + "/completions")


def response(status: int) -> httpx.Response:
    return httpx.Response(status, request=REQUEST)


def openai_error(cls, status: int, message: str = "refused"):
    return cls(message, response=response(status), body=None)


def http_error(status: int) -> httpx.HTTPStatusError:
    return httpx.HTTPStatusError(f"status {status}", request=REQUEST, response=response(status))


UNAUTHORIZED = (ActiveRagError, "answered 401: it .* set ACTIVERAG_API_KEY")
CASES = {
    "openai 401": (openai_error(openai.AuthenticationError, 401), *UNAUTHORIZED),
    "httpx 401": (http_error(401), *UNAUTHORIZED),
    "openai 404": (openai_error(openai.NotFoundError, 404), ModelMismatch,
                   "does not serve model 'm'.*GET /v1/models"),
    "openai 400 logprobs": (openai_error(openai.BadRequestError, 400, "logprobs must be <= 5"),
                            NoLogprobs, "larger --max-logprobs"),
    "openai 400 too long": (openai_error(openai.BadRequestError, 400,
                                         "maximum context length is 8 tokens"), PromptTooLong,
                            "larger --max-model-len"),
    "openai 400 other": (openai_error(openai.BadRequestError, 400, "bad field"), ActiveRagError,
                         "rejected the request: bad field"),
    "openai 500": (openai_error(openai.InternalServerError, 500), LMServerError,
                   "retrying may help"),
    "openai timeout": (openai.APITimeoutError(REQUEST), LMServerError,
                       "did not answer within 7 s.*ACTIVERAG_LM_TIMEOUT"),
    "httpx timeout": (httpx.ReadTimeout("slow", request=REQUEST), LMServerError,
                      "did not answer within 7 s.*ACTIVERAG_LM_TIMEOUT"),
    "openai connection": (openai.APIConnectionError(request=REQUEST), LMServerUnreachable,
                          "unreachable.*activerag serve"),
    "httpx connect": (httpx.ConnectError("refused", request=REQUEST), LMServerUnreachable,
                      r"unreachable \(refused\).*activerag serve"),
}


@pytest.mark.parametrize("exc,kind,says", CASES.values(), ids=list(CASES))
def test_every_failure_names_its_cause_and_fix(monkeypatch, exc, kind, says):
    monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)
    error = translate(exc, URL, "m", timeout=7)
    assert type(error) is kind
    assert re.search(says, str(error)), str(error)


@pytest.mark.parametrize("status", [400, 402, 403, 404, 409, 422, 429, 500, 502, 503])
def test_only_401_is_read_as_a_key_problem(status):
    assert "401" not in str(translate(http_error(status), URL, "m", timeout=7))


TOO_LONG = [
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
    "Input prompt (5000 tokens) is longer than the maximum model length of 4096.",
    "max_tokens must be at least 1, got 0.",
    "the request exceeds the available context size, try increasing it",
    "Requested token count exceeds the model's maximum context length of 2048",
]
NOT_TOO_LONG = [
    "temperature must be at most the maximum 2.0",
    "top_logprobs must be at most 20 tokens",
    "unknown field: foo",
]


@pytest.mark.parametrize("message", TOO_LONG)
def test_each_engine_s_context_overflow_is_a_prompt_too_long(message):
    error = too_long_error("m", message)
    assert isinstance(error, PromptTooLong) and message in str(error)
    assert "--max-model-len" in str(error)


@pytest.mark.parametrize("message", NOT_TOO_LONG)
def test_other_rejections_are_not_read_as_an_overflow(message):
    assert too_long_error("m", message) is None
