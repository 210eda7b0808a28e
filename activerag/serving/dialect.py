"""Where vLLM's and llama.cpp's OpenAI-compatible servers differ, in one place.

- `/v1/models`: llama-server's entries say `owned_by: llamacpp` and carry `meta.n_ctx` (each
  slot's context); vLLM's carry `max_model_len`.
- Logprobs on `/v1/completions`: vLLM returns the completion shape (`tokens`,
  `token_logprobs`, `top_logprobs` as {text: logprob}, `text_offset`); llama-server returns
  the chat shape (`content[i] = {id, token, bytes, logprob, top_logprobs: [...]}`).
  `completion_logprobs` turns the second into the first, so every reader reads one shape.
- `/tokenize` takes `prompt` (vLLM) or `content` (llama-server); `/detokenize` answers
  `prompt` or `content`.
- llama-server's stream does not say which stop string ended it, so it is sent none and its
  stops are found on the client (`first_stop`). vLLM is sent them, but asked to keep them in
  the text (otherwise it holds back a stop string's length of text at every token), and the
  client cuts them off the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

VLLM, LLAMA_CPP = "vllm", "llama.cpp"
ID_PREFIX = "token_id:"
"""vLLM's spelling of a token returned as its id (return_tokens_as_token_ids)."""


def engine_of(entries: Sequence[Mapping[str, Any]]) -> str:
    """Which server answered /v1/models with ENTRIES."""
    return LLAMA_CPP if any(e.get("owned_by") == "llamacpp" for e in entries) else VLLM


def context_of(entry: Mapping[str, Any]) -> int | None:
    """The context window one /v1/models entry states (None when it states none)."""
    window = entry.get("max_model_len") or (entry.get("meta") or {}).get("n_ctx")
    return int(window) if isinstance(window, int) and window > 0 else None


def tokenize_body(engine: str, text: str, special: bool = False) -> dict[str, Any]:
    """The /tokenize body for TEXT (SPECIAL: add the model's BOS as a completion would)."""
    if engine == LLAMA_CPP:
        return {"content": text, "add_special": special}
    return {"prompt": text, "add_special_tokens": special}


def detokenized(out: Mapping[str, Any]) -> str:
    """The text of a /detokenize answer, in either spelling."""
    return str(out["prompt"] if "prompt" in out else out.get("content", ""))


def completion_logprobs(lp: Mapping[str, Any] | None, as_ids: bool = False
                        ) -> dict[str, Any] | None:
    """LP in vLLM's completion shape whichever server sent it (AS_IDS: tokens spelt as
    `token_id:N`, as vLLM does when asked). Alternatives that decode alike keep the likeliest,
    as vLLM keys them by text."""
    if not lp or lp.get("tokens") is not None or lp.get("content") is None:
        return dict(lp) if lp else None
    tokens, logprobs, tops = [], [], []
    for entry in lp["content"]:
        tokens.append(_spelt(entry, as_ids))
        logprobs.append(entry.get("logprob"))
        top: dict[str, float] = {}
        for alt in entry.get("top_logprobs") or []:
            top.setdefault(_spelt(alt, as_ids), float(alt["logprob"]))
        tops.append(top)
    return {"tokens": tokens, "token_logprobs": logprobs, "top_logprobs": tops,
            "text_offset": None}


def _spelt(entry: Mapping[str, Any], as_ids: bool) -> str:
    if as_ids:
        return f"{ID_PREFIX}{entry['id']}"
    # llama-server sends the bytes of a character split over tokens with the token that
    # completes it, so the tokens' texts join into the generated text
    return str(entry.get("token", ""))


def first_stop(text: str, stops: Sequence[str]) -> tuple[int, str] | None:
    """Where the earliest of STOPS begins in TEXT, and which (the longest where two begin
    together); None when none occurs."""
    found = [(at, -len(s), s) for s in stops if s and (at := text.find(s)) >= 0]
    if not found:
        return None
    at, _, stop = min(found)
    return at, stop
