"""A server that answers completions without logprobs gets a clear error (not a crash)."""

import json

import pytest
from fakeserver import QuietHandler, serving

from activerag.errors import NoLogprobs
from activerag.lm import VLLMClient


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
