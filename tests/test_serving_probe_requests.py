"""The probe's requests and how it reads the answers (issue #38, survivors of the random
mutants): a stream whose events have no blank after `data:` (server-sent events allow it) still
shows its usage, and the logit_bias probe asks for the one token the bias should choose."""

from collections.abc import Iterator
from typing import Any

import pytest

from activerag.serving import probe as probing
from activerag.serving.probe import probe
from activerag.serving.probe_requests import TOPS
from activerag.testing.fake_lm import Backend, BackendHandler, serving


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    probing.forget()
    yield
    probing.forget()


class _Compacting:
    """A response stream that writes `data:{...}` where the fake writes `data: {...}`."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, data: bytes) -> int:
        return self.real.write(data.replace(b"data: ", b"data:"))

    def flush(self) -> None:
        self.real.flush()


class _CompactEvents(BackendHandler):
    def _stream(self, *args: Any) -> None:
        real = self.wfile
        self.wfile = _Compacting(real)  # type: ignore[assignment]
        try:
            super()._stream(*args)
        finally:
            self.wfile = real


def test_a_stream_without_a_blank_after_data_is_read():
    handler = type("Handler", (_CompactEvents,), {"backend": Backend()})
    with serving(handler) as url:
        found = probe(url)
    assert "stream" in found.found and "stream" not in found.why


def test_only_the_top_logprobs_probe_generates_two_tokens_and_the_bias_probe_one():
    b = Backend()
    with serving(type("Handler", (BackendHandler,), {"backend": b})) as url:
        found = probe(url)
    assert "logit_bias" in found.found
    completions = [body for path, body in b.requests if path == "/v1/completions"]
    two = [body for body in completions if body.get("max_tokens", 0) > 1]
    assert two and all(set(body) == {"model", "prompt", "max_tokens", "temperature", "logprobs"}
                       and body["logprobs"] in TOPS for body in two)
    biased = [body for body in completions if "logit_bias" in body]
    assert len(biased) == 1 and biased[0]["max_tokens"] == 1
