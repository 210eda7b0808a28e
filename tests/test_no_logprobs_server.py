"""A server that answers completions without logprobs gets a clear error (not a crash)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from activerag.errors import NoLogprobs
from activerag.lm import VLLMClient


class _NoLogprobs(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"data": [{"id": "m"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        chunk = {"id": "x", "object": "text_completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "text": "Hi", "logprobs": None, "finish_reason": None}]}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())


async def test_server_without_logprobs():
    srv = HTTPServer(("127.0.0.1", 0), _NoLogprobs)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        client = VLLMClient(f"http://127.0.0.1:{srv.server_port}/v1")
        assert client.model == "m"
        with pytest.raises(NoLogprobs, match="without token logprobs"):
            await client.generate("Hello", max_tokens=4)
    finally:
        srv.shutdown()
