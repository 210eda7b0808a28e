"""A scripted LM for unit tests: it returns the tokens and probabilities a test chooses."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from activerag.lm import CutFn, Generation, Token

Script = Sequence[tuple[str, float]]


@dataclass
class ScriptedLM:
    """Replies with scripted generations in order and records every prompt it was sent.

    Each reply is a list of (token text, probability). Like the real client it streams
    token by token and stops as soon as `cut` finds the end of the first sentence.
    """

    replies: list[Script]
    model: str = "scripted"
    prompts: list[str] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)

    async def generate(self, prompt: str, *, max_tokens: int, cut: CutFn | None = None,
                       stop: list[str] | None = None,
                       logit_bias: dict[int, float] | None = None) -> Generation:
        self.prompts.append(prompt)
        self.calls.append({"max_tokens": max_tokens, "stop": stop, "logit_bias": logit_bias})
        if not self.replies:
            raise AssertionError(f"the scripted LM ran out of replies; prompt:\n{prompt}")
        script = list(self.replies.pop(0))[:max_tokens]
        text, tokens, end = "", [], None
        for piece, prob in script:
            tokens.append(Token(piece, math.log(prob), len(text)))
            text += piece
            if cut is not None:
                end = cut(text, False)
                if end is not None:
                    break
        finished = end is None and len(script) < max_tokens
        stop_reason = None
        hits = [(text.find(s), s) for s in stop or [] if s in text]
        if end is None and hits:
            end, stop_reason = min(hits)
            finished = False
        if end is None:
            end = cut(text, True) if cut is not None else len(text)
            end = len(text) if end is None else end
        return Generation(text[:end], [t for t in tokens if t.start < end], finished,
                          len(tokens), stop_reason, len(prompt.split()), prompt)

    async def token_ids(self, text: str) -> list[int]:
        return [1000 + ord(ch) for ch in text]


def sentence(text: str, prob: float = 0.95, low: dict[str, float] | None = None) -> Script:
    """Split TEXT into word tokens (leading spaces kept) with PROB, or LOW[word] for some."""
    words = text.split(" ")
    toks = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return [(t, (low or {}).get(t.strip(), prob)) for t in toks]
