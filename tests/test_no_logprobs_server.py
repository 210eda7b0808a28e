"""A server that answers completions without logprobs gets a clear error (not a crash)."""

import json

import pytest

from activerag.errors import NoLogprobs
from activerag.serving.lm import VLLMClient
from activerag.testing.fake_lm import QuietHandler, serving


class _NoLogprobs(QuietHandler):
    def do_GET(self):
        self._json(200, {"data": [{"id": "m"}]})

    def do_POST(self):
        self._body()
        chunk = {"id": "x", "object": "text_completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "text": "Hi", "logprobs": None, "finish_reason": None}]}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())


async def test_server_without_logprobs():
    with serving(_NoLogprobs) as url:
        client = VLLMClient(url)
        assert client.model == "m"
        with pytest.raises(NoLogprobs, match="without token logprobs"):
            await client.generate("Hello", max_tokens=4)


class _TwoTops(QuietHandler):
    """Streams one token per chunk, each with two alternatives, whatever was asked."""

    def do_GET(self):
        self._json(200, {"data": [{"id": "m"}]})

    def do_POST(self):
        self._body()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for i, (text, end) in enumerate([("Hi", None), (".", "length")]):
            lp = {"tokens": [text], "token_logprobs": [-0.1], "text_offset": [2 * i],
                  "top_logprobs": [{text: -0.1, "x": -3.0}]}
            chunk = {"id": "x", "object": "text_completion", "created": 0, "model": "m",
                     "choices": [{"index": 0, "text": text, "logprobs": lp,
                                  "finish_reason": end}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


async def test_a_server_that_gives_fewer_alternatives_than_the_trigger_needs_is_named():
    with serving(_TwoTops) as url:
        with pytest.raises(NoLogprobs, match="returned 2 top logprobs where 20 were asked"):
            await VLLMClient(url, top_logprobs=20).generate("Hello", max_tokens=2)
        out = await VLLMClient(url, top_logprobs=2).generate("Hello", max_tokens=2)
        assert [t.top for t in out.tokens] == [(-0.1, -3.0), (-0.1, -3.0)]
