"""The LM client's errors, each naming the cause and the fix: a busy server, an unreachable
one, a prompt too long for its window, and the translation of the OpenAI client's errors."""

from __future__ import annotations

import httpx
import openai

from activerag.errors import (
    ActiveRagError,
    LMServerUnreachable,
    ModelMismatch,
    NoLogprobs,
    PromptTooLong,
)
from activerag.serving.security import unauthorized_error
from activerag.settings import lm_timeout


class LMServerError(ActiveRagError):
    """The server failed a request with a 5xx answer; a retry may succeed."""


def busy_error(base_url: str, timeout: float) -> LMServerError:
    """A request that timed out on a server that accepted it: busy, not unreachable."""
    return LMServerError(f"the LM server at {base_url} did not answer within {timeout:g} s "
                         "(it is busy or stuck); lower --concurrency, or give requests longer "
                         "with ACTIVERAG_LM_TIMEOUT=SECONDS")


def unreachable_error(base_url: str, cause: str) -> LMServerUnreachable:
    """A request refused, reset, or cut off by a server dying midway; CAUSE says how."""
    return LMServerUnreachable(f"the LM server at {base_url} is unreachable ({cause}); start it "
                               "with `activerag serve` or pass the URL of a running vLLM server")


def too_long_error(model: str, message: str) -> PromptTooLong | None:
    """The error for a rejection that says the prompt overflows the context window, else None.
    A prompt that fills the window exactly leaves no room for one token: vLLM then cuts the
    request's max_tokens to 0 and refuses that ("max_tokens must be at least 1, got 0").
    llama-server shares its -c among its --parallel slots, and says so per slot."""
    if "context size" in message:
        return PromptTooLong(
            f"the prompt does not fit a llama-server slot of {model!r}: {message}. Each of its "
            "slots holds -c / -np tokens: serve it with a larger --max-model-len (activerag "
            "serve --engine llama.cpp gives each slot that many) or fewer --parallel slots "
            "(by hand: raise -c or lower -np), or retrieve fewer or shorter documents")
    if "context length" in message or "maximum" in message and "token" in message or \
            "max_tokens must be at least 1" in message:
        return PromptTooLong(
            f"the prompt does not fit the context window of {model!r}: {message}. "
            "Retrieve fewer or shorter documents (lower k), lower max tokens, or serve the "
            "model with a larger --max-model-len"
        )
    return None


def translate(exc: Exception, base_url: str, model: str,
               timeout: float | None = None) -> ActiveRagError:
    """Turn an OpenAI client error into one that names the cause and the fix."""
    if isinstance(exc, openai.APITimeoutError | httpx.ReadTimeout | httpx.WriteTimeout):
        return busy_error(base_url, timeout or lm_timeout())
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return unreachable_error(base_url, str(exc))
    if isinstance(exc, openai.AuthenticationError) or (
            isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 401):
        return unauthorized_error(base_url)
    if isinstance(exc, openai.NotFoundError):
        return ModelMismatch(
            f"the server at {base_url} does not serve model {model!r} ({exc}); "
            "pass the name listed by GET /v1/models, or omit it to use the served one"
        )
    if isinstance(exc, openai.BadRequestError):
        msg = str(exc)
        if "logprobs" in msg:
            return NoLogprobs(f"the server at {base_url} refused the logprobs asked for ({msg}); "
                              "start vLLM with a larger --max-logprobs, or choose a trigger "
                              "that reads only each token's own probability")
        return too_long_error(model, msg) or ActiveRagError(
            f"the LM server rejected the request: {msg}")
    if isinstance(exc, openai.InternalServerError | openai.APITimeoutError):
        return LMServerError(f"the LM server at {base_url} failed: {exc}; retrying may help")
    return ActiveRagError(f"LM request to {base_url} failed: {exc!r}")
