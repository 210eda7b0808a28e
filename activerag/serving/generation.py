"""What one LM call produced (Generation, its Tokens), and reading the tokens and their
log-probabilities out of a streamed completion's chunks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from activerag.errors import NoLogprobs
from activerag.serving.dialect import completion_logprobs


@dataclass(frozen=True)
class Token:
    """One generated token: its text, natural-log probability and start offset in the text."""

    text: str
    logprob: float
    start: int
    top: tuple[float, ...] = ()
    """Natural-log probabilities of the server's top alternatives at this position, when the
    client asked for more than one (a trigger that reads entropy needs them)."""

    @property
    def prob(self) -> float:
        """Probability of the token, exp(logprob)."""
        return math.exp(self.logprob)


@dataclass(frozen=True)
class ServerTimes:
    """The server's own account of one request, as of the last chunk read (llama-server's
    per-token `timings`; a stream closed at a cut misses the token or two decoded after it)."""

    cached: int
    """Prompt tokens served from the slot's cache."""
    prefilled: int
    """Prompt tokens computed anew."""
    prefill_ms: float
    decoded: int
    decode_ms: float

    @classmethod
    def of(cls, timings: Any) -> ServerTimes | None:
        """Read llama-server's `timings` object; None where a chunk carries none."""
        if not isinstance(timings, dict):
            return None
        try:
            return cls(int(timings.get("cache_n", 0)), int(timings["prompt_n"]),
                       float(timings["prompt_ms"]), int(timings["predicted_n"]),
                       float(timings["predicted_ms"]))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass
class Generation:
    """What one LM call produced, after trimming."""

    text: str
    tokens: list[Token]
    finished: bool
    """The output ended right after the kept text: an end of sequence, or the stop string
    named by stop_reason (callers that stop to act, like self-ask, check which)."""
    generated_tokens: int = 0
    """Tokens the server generated for this call, including any cut away."""
    stop_reason: str | None = None
    """The stop string that ended generation, if one did."""
    prompt_tokens: int = 0
    """Tokens in the prompt, as the server counted them."""
    prompt: str = field(default="", repr=False)
    complete: bool = False
    """The kept text ends where its unit ends: the model stopped there, or the cut saw the
    unit end while the stream went on. False when the token budget ran out first."""
    server: ServerTimes | None = None
    """What the server says this request cost (llama-server; None from vLLM or a cache)."""


def trim(text: str, tokens: Sequence[Token], end: int) -> tuple[str, list[Token]]:
    """Cut TEXT at END and keep the tokens that start before it."""
    return text[:end], [t for t in tokens if t.start < end]


def check_alternatives(tokens: Sequence[Token], want: int, url: str) -> None:
    """Refuse a generation none of whose positions came with the WANT top logprobs asked, less
    the few that may merge (`collided`).

    vLLM and llama-server key each position's alternatives by their text, so two that decode
    alike keep one entry and a position may show one or two fewer than asked: a generation of
    a token or two can show fewer at every position (llama-server at 20, in an ETC run). A
    server's limit cuts every position, and further.
    """
    if want > 1 and tokens and max(len(t.top) for t in tokens) < want - collided(want):
        got = max(len(t.top) for t in tokens)
        raise NoLogprobs(f"the server at {url} returned {got} top logprobs where {want} were "
                         "asked (the trigger reads each position's alternatives); start vLLM "
                         f"with --max-logprobs {want} or choose another trigger")


def collided(want: int) -> int:
    """How many of WANT alternatives two-that-decode-alike may merge away before a position's
    count says the server cut it: a tenth (2 of 20; none of 2)."""
    return want // 10


def _tokens_of(piece: str, info: dict[str, Any] | None, base: int, url: str,
               want: int = 1) -> list[Token]:
    """Tokens of one streamed chunk, with offsets into the whole generation.

    vLLM's text_offset counts from the start of the generation. The chunk's own text can lag
    its tokens (text that might begin a stop string is held back), so the offsets, not the
    text received so far, place the tokens; BASE serves only when offsets are missing.
    """
    lp = completion_logprobs((info or {}).get("logprobs"))
    if lp is None and not want:
        return []
    if lp is None:
        if piece or (info or {}).get("finish_reason") is None:
            raise NoLogprobs(
                f"the server at {url} returned text without token logprobs; FLARE needs them. "
                "Use vLLM's OpenAI-compatible server (it honours `logprobs` on /v1/completions) "
                "and start it with --max-logprobs >= 1"
            )
        return []
    offsets = lp.get("text_offset")
    if not offsets:
        offsets, pos = [], base
        for tok in lp["tokens"]:
            offsets.append(pos)
            pos += len(tok)
    tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
    return [Token(tok, float(logprob), off,
                  tuple(float(v) for v in top.values()) if want > 1 and top else ())
            for tok, logprob, off, top in zip(lp["tokens"], lp["token_logprobs"], offsets, tops,
                                              strict=True)
            if logprob is not None]
