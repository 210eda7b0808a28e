"""Fake OpenAI-compatible LM servers for tests and benchmarks: threads on a free loopback port.

`Backend(lacks={"echo"}, max_top=5)` answers as vLLM does (GET /v1/models with max_model_len,
/v1/completions streamed or not, logprobs with k alternatives, echo with max_tokens 0, n
samples, token-id prompts and ids back, logit_bias, /tokenize, /detokenize, chat) except for
what it lacks, which it refuses the way other servers do (404, 400 with a message) or, for
logprobs, ignores (Ollama-style: text without them). Tokens are words; every reply is REPLY
(or the backend's own `reply`). With `latency`, each completion waits that many seconds before
its first byte, as a real server's call takes time (the Ray scheduler's benchmark: a fixed
200 ms a call, so that what is measured is the scheduler and not the LM).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer(ThreadingHTTPServer):
    """A threaded HTTP server whose request threads never keep the process alive."""

    daemon_threads = True


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler for test servers: no request log, JSON bodies in and out."""

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def _body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["content-length"])))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve HANDLER on a free loopback port for a one-off test; yield the base URL (.../v1)."""
    httpd = LoopbackServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()



REPLY = " Kelmor lies on the Vedria."
LP = -0.25
"""The logprob of every chosen token; alternatives are lower."""


class Backend:
    """What one fake server can do, and every request it got."""

    def __init__(self, lacks: set[str] | frozenset[str] = frozenset(), max_top: int = 20,
                 refuse_logprobs: bool = False, model: str = "fake-model",
                 reply: str = REPLY, owned_by: str | None = None, slots: int | None = None,
                 latency: float = 0.0) -> None:
        self.lacks = set(lacks)
        self.owned_by = owned_by
        """The /v1/models entry's owner: "llamacpp" lists it as llama-server does."""
        self.slots = slots
        """llama-server's slots: GET /props says them, and n above them is refused."""
        self.reply = reply
        self.latency = latency
        """Seconds each completion waits before answering."""
        """Every completion's text (cut at max_tokens words)."""
        self.max_top = max_top
        self.refuse_logprobs = refuse_logprobs
        """Without logprobs: refuse a request that asks for them (400) instead of ignoring."""
        self.model = model
        self.honours_bias = True
        """False: accept logit_bias and ignore it."""
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.keys: list[tuple[str, str | None]] = []
        """Each request's path and Authorization header, GETs included."""
        self._vocab: dict[str, int] = {}
        self._lock = threading.Lock()

    def ids(self, text: str) -> list[int]:
        with self._lock:
            return [self._vocab.setdefault(w, len(self._vocab) + 7)
                    for w in re.findall(r"\s*\S+", text)]

    def word(self, token: int) -> str:
        with self._lock:
            return next((w for w, i in self._vocab.items() if i == token), f" w{token}")


def _lp(words: list[str], ids: list[int], k: int | None, as_ids: bool,
        first_none: bool = False) -> dict[str, Any]:
    keys = [f"token_id:{i}" if as_ids else w for w, i in zip(words, ids, strict=True)]
    tops = [{key: LP, **{(f"token_id:{9000 + j}" if as_ids else f" alt{j}"): LP - 1 - j
                         for j in range((k or 1) - 1)}} for key in keys]
    offsets, pos = [], 0
    for w in words:
        offsets.append(pos)
        pos += len(w)
    values: list[float | None] = [LP] * len(words)
    if first_none and values:
        values[0], tops[0] = None, None  # type: ignore[call-overload]
    return {"tokens": keys, "token_logprobs": values, "top_logprobs": tops,
            "text_offset": offsets}


class BackendHandler(QuietHandler):
    backend: Backend

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "BadRequestError",
                                      "code": status}})

    def do_GET(self) -> None:
        b = self.backend
        b.keys.append((self.path, self.headers.get("authorization")))
        if self.path == "/props" and b.slots is not None:
            self._json(200, {"total_slots": b.slots})
            return
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, "Not Found")
            return
        entry: dict[str, Any] = {"id": b.model, "object": "model"}
        if "context_length" not in b.lacks:
            entry["max_model_len"] = 2048
        if b.owned_by:
            entry["owned_by"] = b.owned_by
        self._json(200, {"object": "list", "data": [entry]})

    def do_POST(self) -> None:
        b = self.backend
        b.keys.append((self.path, self.headers.get("authorization")))
        body = self._body()
        path = self.path.rstrip("/")
        b.requests.append((path, body))
        if path == "/tokenize" and "tokenize" not in b.lacks:
            ids = [] if "tokens" in b.lacks else b.ids(body.get("prompt") or "".join(
                m["content"] for m in body.get("messages", [])))
            self._json(200, {"tokens": ids, "count": len(ids), "max_model_len": 2048})
        elif path == "/detokenize" and not {"tokenize", "detokenize"} & b.lacks:
            self._json(200, {"prompt": "".join(b.word(i) for i in body["tokens"])})
        elif path == "/v1/chat/completions" and "chat" not in b.lacks:
            self._json(200, {"choices": [{"index": 0, "finish_reason": "length", "message": {
                "role": "assistant", "content": REPLY.split()[0]}}]})
        elif path == "/v1/completions" and "completions" not in b.lacks:
            self._complete(body)
        else:
            self._error(404, "Not Found")

    def _refusal(self, body: dict[str, Any]) -> str | None:
        """Why this backend refuses BODY, or None."""
        b = self.backend
        k = body.get("logprobs")
        if k is not None and "logprobs" in b.lacks and b.refuse_logprobs:
            return "logprobs is not supported"
        if k is not None and "logprobs" not in b.lacks and k > b.max_top:
            return f"Requested sample logprobs of {k}, which is greater than max allowed: " \
                   f"{b.max_top}"
        if body.get("echo") and "echo" in b.lacks:
            return "echo is not supported"
        if body.get("n", 1) > 1 and "n" in b.lacks:
            return "n > 1 is not supported"
        if b.slots is not None and body.get("n", 1) > b.slots:
            return f"Field 'n': Value must be between 1 <= value <= {b.slots}"
        if isinstance(body.get("prompt"), list) and "token_ids" in b.lacks:
            return "prompt must be a string"
        if body.get("logit_bias") and "logit_bias" in b.lacks:
            return "logit_bias is not supported"
        if (body.get("stream_options") or {}).get("continuous_usage_stats") and \
                "stream" in b.lacks:
            return "Unrecognized request argument: continuous_usage_stats"
        return None

    def handle(self) -> None:
        """Serve, and let a client that hung up mid-reply go quietly (a killed test process)."""
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _complete(self, body: dict[str, Any]) -> None:
        b = self.backend
        if b.latency:
            time.sleep(b.latency)
        refusal = self._refusal(body)
        if refusal:
            self._error(400, refusal)
            return
        k = body.get("logprobs") if "logprobs" not in b.lacks else None
        as_ids = bool(body.get("return_tokens_as_token_ids")) and "token_ids" not in b.lacks
        words = re.findall(r"\s*\S+", b.reply)[: body["max_tokens"]]
        bias = [int(t) for t, v in (body.get("logit_bias") or {}).items()
                if v >= 50 and b.honours_bias]
        if bias and words:
            words[0] = b.word(bias[0])
        ids = b.ids("".join(words))
        if bias and ids:
            ids[0] = bias[0]
        if body.get("stream"):
            self._stream(body, words, ids, k, as_ids)
            return
        prompt = body["prompt"]
        prompt_ids = prompt if isinstance(prompt, list) else b.ids(prompt)
        prompt_words = [b.word(i) for i in prompt_ids]
        choices = []
        for n in range(body.get("n", 1)):
            logprobs = None
            if k is not None:
                if body.get("echo"):
                    logprobs = _lp(prompt_words + words, list(prompt_ids) + ids, k, as_ids,
                                   first_none=True)
                else:
                    logprobs = _lp(words, ids, k, as_ids)
            text = ("".join(prompt_words) if body.get("echo") else "") + "".join(words)
            choices.append({"index": n, "text": text, "logprobs": logprobs,
                            "finish_reason": "length"})
        self._json(200, {"id": "cmpl-fake", "object": "text_completion", "model": b.model,
                         "choices": choices, "usage": {"prompt_tokens": len(prompt_ids),
                                                       "completion_tokens": len(words)}})

    def _stream(self, body: dict[str, Any], words: list[str], ids: list[int], k: int | None,
                as_ids: bool) -> None:
        usage_opts = body.get("stream_options") or {}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        offset = 0
        for i, (word, token) in enumerate(zip(words, ids, strict=True)):
            lp = None
            if k is not None:
                lp = _lp([word], [token], k, as_ids)
                lp["text_offset"] = [offset]
            chunk: dict[str, Any] = {"id": "cmpl-fake", "object": "text_completion",
                                     "created": 0, "model": self.backend.model,
                                     "choices": [{"index": 0, "text": word, "logprobs": lp,
                                                  "finish_reason": "length"
                                                  if i == len(words) - 1 else None}]}
            if usage_opts.get("continuous_usage_stats"):
                chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": i + 1,
                                  "total_tokens": 4 + i}
            offset += len(word)
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        if usage_opts.get("include_usage"):
            last = {"id": "cmpl-fake", "object": "text_completion", "created": 0,
                    "model": self.backend.model, "choices": [],
                    "usage": {"prompt_tokens": 3, "completion_tokens": len(words),
                              "total_tokens": 3 + len(words)}}
            self.wfile.write(f"data: {json.dumps(last)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@contextmanager
def backend(b: Backend) -> Iterator[str]:
    """Serve B on a free loopback port; yield its base URL (.../v1)."""
    handler = type("ServedBackend", (BackendHandler,), {"backend": b})
    with serving(handler) as url:
        yield url
