"""The requests a probe sends a server, each shaped like those the methods send, and what
each answer says it can do (activerag/serving/probe.py asks once and keeps the answers)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from activerag.errors import LMServerUnreachable
from activerag.serving.dialect import (
    ID_PREFIX,
    LLAMA_CPP,
    VLLM,
    completion_logprobs,
    context_of,
    engine_of,
    tokenize_body,
)
from activerag.serving.security import auth_headers

if TYPE_CHECKING:
    import httpx

ABILITIES: dict[str, str] = {
    "completions": "POST /v1/completions answers a text prompt",
    "stream": "completions stream with usage in every chunk (the LM client's requests)",
    "logprobs": "completions return each token's logprob (logprobs: 1)",
    "top_logprobs": "the largest logprobs: k accepted (20, 5 and 1 are tried)",
    "echo": "echo with max_tokens: 0 returns the prompt's token logprobs (scoring a text)",
    "n": "n: 2 returns two samples in one request (with temperature, top_p, top_k, seed)",
    "token_ids": "token-id prompts, tokens returned as ids (return_tokens_as_token_ids)",
    "tokenize": "POST /tokenize and /detokenize (beside /v1; vLLM's or llama-server's)",
    "logit_bias": "logit_bias on completions is honoured",
    "chat": "POST /v1/chat/completions answers",
}
"""Every ability the probe asks about, and what having it means."""
TOPS = (20, 5, 1)
"""The `logprobs: k` values tried, largest first."""
PROMPT = "The capital"


@dataclass(frozen=True)
class Abilities:
    """What one server, serving one model, was found to do."""

    url: str
    model: str
    found: frozenset[str]
    """The abilities it showed (names of ABILITIES; "top_logprobs" when it gave any)."""
    top_logprobs: int = 0
    """The largest of TOPS it honoured with that many alternatives (0: none)."""
    context_length: int | None = None
    """Its context window (vLLM's max_model_len in /v1/models); None when it does not say."""
    why: dict[str, str] = field(default_factory=dict, hash=False)
    """For an ability it lacks: what the server said or did."""
    probed_at: float = 0.0
    engine: str = VLLM
    """Which server answered (dialect.VLLM or LLAMA_CPP)."""
    most_n: int | None = None
    """The most samples one request may ask for (llama-server: its slots, /props total_slots);
    None: no limit known (vLLM's)."""

    def has(self, need: str) -> bool:
        """Whether NEED holds: an ability name, top_logprobs_K (at least K alternatives) or n_K
        (K samples in one request)."""
        if need.startswith("top_logprobs_"):
            return self.top_logprobs >= int(need.removeprefix("top_logprobs_"))
        if need.startswith("n_"):
            return "n" in self.found and (self.most_n is None
                                          or self.most_n >= int(need.removeprefix("n_")))
        return need in self.found

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready record (the file cache's and `doctor --json`'s)."""
        out = asdict(self)
        out["found"] = sorted(self.found)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Abilities:
        return cls(**{**data, "found": frozenset(data["found"])})


class _Asker:
    """Posts the probe's requests to one server and keeps what each refusal said."""

    def __init__(self, url: str, model: str, timeout: float) -> None:
        self.url, self.model = url.rstrip("/"), model
        self.root = self.url.removesuffix("/v1")
        # llama-server closes a connection after a stream, where httpx would send the next
        # request: a connection each (a handful of requests)
        import httpx  # here, not at import: the CLI's start stays quick

        self.http = httpx.Client(timeout=timeout, headers=auth_headers(),
                                 limits=httpx.Limits(max_keepalive_connections=0))
        self.why: dict[str, str] = {}

    def post(self, ability: str, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON answer to BODY at PATH, or None (the reason kept under ABILITY)."""
        import httpx

        base = self.root if path in ("/tokenize", "/detokenize") else self.url
        try:
            resp = self.http.post(base + path, json={"model": self.model, **body})
        except httpx.TimeoutException:
            self.why[ability] = "timed out"
            return None
        except httpx.TransportError as exc:
            raise LMServerUnreachable(f"the LM server at {self.url} stopped answering while "
                                      f"probed ({exc!r})") from exc
        if resp.status_code >= 400:
            self.why[ability] = f"HTTP {resp.status_code}: {_message(resp)}"
            return None
        if "text/event-stream" in resp.headers.get("content-type", ""):
            return {"events": _events(resp.text)}
        try:
            return dict(resp.json())
        except ValueError:
            self.why[ability] = "answered with something other than JSON"
            return None

    def lacks(self, ability: str, reason: str) -> None:
        self.why.setdefault(ability, reason)


def _message(resp: httpx.Response) -> str:
    """The error text of a refusal, in one short line."""
    try:
        data = resp.json()
        error = data.get("error", data) if isinstance(data, dict) else data
        text = error.get("message", error) if isinstance(error, dict) else error
    except ValueError:
        text = resp.text
    return " ".join(str(text).split())[:160]


def _events(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            try:
                events.append(json.loads(line[5:]))
            except ValueError:
                continue
    return events


def _choice(out: dict[str, Any] | None) -> dict[str, Any]:
    choices = (out or {}).get("choices") or [{}]
    return dict(choices[0])


def _top_logprobs(ask: _Asker) -> int:
    """The largest of TOPS the server honours with that many alternatives at some position."""
    for k in TOPS:
        out = ask.post("top_logprobs", "/completions", {
            "prompt": PROMPT, "max_tokens": 2, "temperature": 0.0, "logprobs": k})
        lp = completion_logprobs(_choice(out).get("logprobs")) or {}
        tops = [t for t in lp.get("top_logprobs") or [] if t]
        if out is not None and any(v is not None for v in lp.get("token_logprobs") or []):
            if max((len(t) for t in tops), default=0) >= k:
                return k
            ask.lacks("top_logprobs", f"logprobs: {k} gave {max(map(len, tops), default=0)} "
                                      "alternatives")
        elif out is not None:
            ask.lacks("logprobs", "its completions carry none, whatever logprobs: k asks")
    ask.lacks("logprobs", ask.why.get("top_logprobs", "no logprobs"))
    return 0


def _tokenize(ask: _Asker, engine: str) -> list[int]:
    """The prompt's token ids from /tokenize when /detokenize also answers; [] otherwise."""
    out = ask.post("tokenize", "/tokenize", tokenize_body(engine, PROMPT))
    ids = [int(t) for t in (out or {}).get("tokens") or []]
    if out is not None and not ids:
        ask.lacks("tokenize", "/tokenize answered without tokens")
    if ids and ask.post("tokenize", "/detokenize", {"tokens": ids[:1]}) is not None:
        return ids
    return []


def ask(url: str, model: str | None, timeout: float) -> Abilities:
    """What the server at URL serving MODEL (else its first) answers to each probe request."""
    from activerag.serving.running import server_entries

    entries = server_entries(url)
    if not entries:
        raise LMServerUnreachable(f"the server at {url} lists no model in /v1/models")
    entry = next((e for e in entries if e.get("id") == model), entries[0])
    model = model or str(entry["id"])
    window = context_of(entry)
    engine = engine_of(entries)
    ask = _Asker(url, model, timeout)
    found: set[str] = set()
    try:
        if _choice(ask.post("completions", "/completions", {
                "prompt": PROMPT, "max_tokens": 1, "temperature": 0.0})).get("text") is not None:
            found.add("completions")
        top = _top_logprobs(ask) if found else 0
        if top:
            found |= {"logprobs", "top_logprobs"}
        found |= _shapes(ask, top)
        ids = _tokenize(ask, engine)
        if ids:
            found.add("tokenize")
        if _token_ids(ask, ids):
            found.add("token_ids")
        if _logit_bias(ask, ids if top else []):
            found.add("logit_bias")
        if _choice(ask.post("chat", "/chat/completions", {
                "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})).get(
                    "message") is not None:
            found.add("chat")
        most_n = _slots(ask) if engine == LLAMA_CPP and "n" in found else None
    finally:
        ask.http.close()
    why = {k: v for k, v in ask.why.items()
           if k not in found or k == "top_logprobs" and top < TOPS[0]}
    return Abilities(url, model, frozenset(found), top, window, why, time.time(), engine,
                     most_n)


def _shapes(ask: _Asker, top: int) -> set[str]:
    """The completion shapes the server gives: a stream with usage (its logprobs when TOP),
    echoed prompt logprobs, and n samples in one request."""
    found: set[str] = set()
    stream = ask.post("stream", "/completions", {
        "prompt": PROMPT, "max_tokens": 1, "temperature": 0.0, "stream": True,
        **({"logprobs": 1} if top else {}),
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}})
    if stream is not None and any(e.get("usage") for e in stream.get("events", [])):
        found.add("stream")
    elif stream is not None:
        ask.lacks("stream", "the stream carried no usage")
    echo = _choice(ask.post("echo", "/completions", {
        "prompt": PROMPT, "max_tokens": 0, "echo": True, "logprobs": 1}))
    scored = (completion_logprobs(echo.get("logprobs")) or {}).get("token_logprobs") or []
    if len(scored) >= 2 and scored[-1] is not None:
        found.add("echo")
    else:
        ask.lacks("echo", "echo gave no prompt logprobs")
    sampled = ask.post("n", "/completions", {
        "prompt": PROMPT, "max_tokens": 1, "n": 2, "temperature": 1.0, "top_p": 1.0,
        "top_k": -1, "seed": 0})
    if len((sampled or {}).get("choices") or []) == 2:
        found.add("n")
    else:
        ask.lacks("n", "n: 2 did not return two samples")
    return found


def _slots(ask: _Asker) -> int | None:
    """llama-server's slots (/props total_slots), which cap n: it refuses more samples in one
    request than it has; None when /props does not say."""
    import httpx

    try:
        slots = ask.http.get(ask.root + "/props").json().get("total_slots")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return slots if isinstance(slots, int) and slots > 0 else None


def _token_ids(ask: _Asker, ids: list[int]) -> bool:
    """Whether the server spells generated tokens as ids when asked (prompt IDS, else [0])."""
    as_ids = _choice(ask.post("token_ids", "/completions", {
        "prompt": ids or [0], "max_tokens": 1, "temperature": 0.0, "logprobs": 1,
        "return_tokens_as_token_ids": True}))
    if str(((completion_logprobs(as_ids.get("logprobs"), as_ids=True) or {}).get("tokens")
            or [""])[0]).startswith(ID_PREFIX):
        return True
    ask.lacks("token_ids", "tokens did not come back as ids")
    return False


def _logit_bias(ask: _Asker, ids: list[int]) -> bool:
    """Whether a +100 bias on the prompt's last token makes it the one generated (IDS: the
    prompt's ids; when unknown, or the server has no logprobs to show the token: accepted)."""
    token = ids[-1] if ids else 0
    seen = {"logprobs": 1, "return_tokens_as_token_ids": True} if ids else {}
    out = _choice(ask.post("logit_bias", "/completions", {
        "prompt": PROMPT, "max_tokens": 1, "temperature": 0.0, "logit_bias": {str(token): 100},
        **seen}))
    if not out:
        return False
    got = (completion_logprobs(out.get("logprobs"), as_ids=True) or {}).get("tokens") or []
    if ids and got and str(got[0]).startswith(ID_PREFIX) and got[0] != f"{ID_PREFIX}{token}":
        ask.lacks("logit_bias", "a +100 bias did not choose the token")
        return False
    return True
