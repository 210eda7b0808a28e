"""A fake OpenAI-compatible server for unit tests: scripted replies to /v1/completions.

It speaks as much of vLLM's API as VLLMClient uses: GET /v1/models, and POST /v1/completions
streamed as server-sent events with logprobs laid out as vLLM lays them out (one token per
chunk, text_offset counted from the start of the generation, usage per chunk when asked).
Each completion request takes the next scripted reply: an HTTP status to fail with, or a text
streamed as word tokens. Stop strings are not applied; max_tokens is.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from activerag.testing.fake_lm import LoopbackServer, QuietHandler

Reply = int | str
"""An HTTP error status to answer with, or the text of a successful completion."""


class FakeServer:
    """A threaded fake vLLM on a free loopback port; use it as a context manager."""

    def __init__(self, replies: Sequence[Reply], model: str = "fake-model",
                 logprob: float = -0.01) -> None:
        self.model = model
        self.logprob = logprob
        self.completions: list[dict[str, Any]] = []
        """The JSON body of every completion request, in order."""
        self._replies = list(replies)
        self._lock = threading.Lock()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL a client is given, ending in /v1."""
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def take(self, body: dict[str, Any]) -> Reply:
        """Record a completion request and return its reply (500 once the script runs out)."""
        with self._lock:
            self.completions.append(body)
            return self._replies.pop(0) if self._replies else 500


class _HTTPServer(LoopbackServer):
    fake: FakeServer


class _Handler(QuietHandler):
    server: _HTTPServer

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "FakeServerError",
                                      "param": None, "code": status}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"no route {self.path}")
            return
        self._json(200, {"object": "list", "data": [{"id": self.server.fake.model,
                                                     "object": "model"}]})

    def do_POST(self) -> None:
        body = self._body()
        if self.path.rstrip("/") != "/v1/completions":
            self._error(404, f"no route {self.path}")
            return
        reply = self.server.fake.take(body)
        if isinstance(reply, int):
            self._error(reply, f"scripted failure {reply}")
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._error(400, "the fake server only streams; send stream=true")

    def _stream(self, body: dict[str, Any], text: str) -> None:
        fake = self.server.fake
        words = re.findall(r"\s*\S+", text)[: body["max_tokens"]]
        finish = "stop" if len(words) == len(re.findall(r"\s*\S+", text)) else "length"
        usage_opts = body.get("stream_options") or {}
        prompt_tokens = len(str(body["prompt"]).split())
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        offset = 0
        chunks: list[dict[str, Any]] = []
        for i, word in enumerate(words):
            chunk: dict[str, Any] = {
                "id": "cmpl-fake", "object": "text_completion", "created": 0, "model": fake.model,
                "choices": [{
                    "index": 0, "text": word, "stop_reason": None,
                    "finish_reason": finish if i == len(words) - 1 else None,
                    "logprobs": {"tokens": [word], "token_logprobs": [fake.logprob],
                                 "text_offset": [offset], "top_logprobs": [{word: fake.logprob}]},
                }],
            }
            if usage_opts.get("continuous_usage_stats"):
                chunk["usage"] = _usage(prompt_tokens, i + 1)
            chunks.append(chunk)
            offset += len(word)
        if usage_opts.get("include_usage"):
            chunks.append({"id": "cmpl-fake", "object": "text_completion", "created": 0,
                           "model": fake.model, "choices": [],
                           "usage": _usage(prompt_tokens, len(words))})
        try:
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            return  # the client closed the stream early, as VLLMClient does at a cut


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}
