"""A scripted text LM for unit tests: it returns the tokens and probabilities a test chooses.

Pass a ScriptedLM as a graph's `lm` (`build_flare_graph(lm=ScriptedLM([...]))`) and write each
reply with `sentence` or `ends`: a test can then say "this draft has one token at p = 0.3, so
retrieval must fire" and check the prompts the graph sent. Like the real server, a generation
ends only by the request's own limits: the cut (a sentence or answer is complete), a stop
string, max_tokens, or an end-of-sequence token the script places (EOS). A reply that runs out
before any of them is a broken test, not a stop. FB-RAG's light LM and tokenizer have scripted
stand-ins here too (ScriptedSampler, WordTokens).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from activerag.serving.generation import Generation, Token
from activerag.serving.lm import CutFn, text_sink

Script = Sequence[tuple[str, float]]
"""One reply: its tokens in order, each with its probability (build one with sentence/ends)."""
EOS = ("<|eos|>", 1.0)
"""The model ends its output here (finish_reason "stop" with no stop string)."""


@dataclass
class ScriptedLM:
    """Replies with scripted generations in order and records every request it was sent.

    `ScriptedLM([ends("Paris is in France.", low={"France.": 0.3})])` answers the first
    request with those tokens (France. at p = 0.3, the rest at 0.95) and refuses a second;
    after the run, `prompts` holds each prompt sent and `calls` each request's max_tokens,
    stop strings and logit bias, for the test to assert on.
    """

    replies: list[Script]
    model: str = "scripted"
    prompts: list[str] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)

    async def generate(self, prompt: str, *, max_tokens: int, cut: CutFn | None = None,
                       stop: list[str] | None = None,
                       logit_bias: dict[int, float] | None = None) -> Generation:
        """Answer PROMPT with the next scripted reply, ended as the server would end it."""
        self.prompts.append(prompt)
        self.calls.append({"max_tokens": max_tokens, "stop": stop, "logit_bias": logit_bias})
        if not self.replies:
            raise AssertionError(f"the scripted LM has no reply left; prompt:\n{prompt}")
        script = list(self.replies.pop(0))
        text = ""
        tokens: list[Token] = []
        end: int | None = None
        ended = stop_reason = None
        sink, sent = text_sink.get(), 0  # streamed as the client streams: a piece waits
        for piece, prob in script:
            if sink is not None and len(text) > sent:
                sink(text[sent:])
                sent = len(text)
            if (piece, prob) == EOS:
                ended = "eos"
                break
            if len(tokens) == max_tokens:
                ended = "length"
                break
            tokens.append(Token(piece, math.log(prob), len(text)))
            text += piece
            hits = sorted((text.find(s), s) for s in stop or [] if s in text)
            if hits:
                # the server leaves the stop string out of the text (its token stays listed)
                ended, (at, stop_reason) = "stop", hits[0]
                text = text[:at]
                break
            if cut is not None and (end := cut(text, False)) is not None:
                ended = "cut"
                break
        else:
            if len(tokens) == max_tokens:
                ended = "length"
        if ended is None:
            raise AssertionError(
                f"scripted reply ran out before an end (EOS, a stop string, the cut or "
                f"max_tokens={max_tokens}): {text!r}"
            )
        if end is None:
            end = cut(text, True) if cut is not None else None
            end = len(text) if end is None else end
        if sink is not None and end > sent:
            sink(text[sent:end])
        finished = ended in ("eos", "stop") and end >= len(text.rstrip())
        return Generation(text[:end], [t for t in tokens if t.start < end], finished,
                          len(tokens), stop_reason, len(prompt.split()), prompt,
                          complete=finished or ended == "cut")

    async def token_ids(self, text: str) -> list[int]:
        """One made-up token id per character (what a logit bias is keyed by)."""
        return [1000 + ord(ch) for ch in text]


def sentence(text: str, prob: float = 0.95, low: dict[str, float] | None = None) -> Script:
    """Split TEXT into word tokens (leading spaces kept) with PROB, or LOW[word] for some.

    The reply has no end of its own: a graph's cut (the sentence is complete), a stop string
    or max_tokens must end it, or concatenate a next part (`[*sentence("A b."), EOS]`)."""
    words = text.split(" ")
    toks = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return [(t, (low or {}).get(t.strip(), prob)) for t in toks if t]


def ends(text: str, prob: float = 0.95, low: dict[str, float] | None = None) -> Script:
    """sentence(TEXT) followed by the end of the model's output: a whole reply."""
    return [*sentence(text, prob, low), EOS]


class _Words:
    """Words as tokens: ids index one shared vocabulary; the window is the instance's."""

    window: int | None
    vocabulary: ClassVar[list[str]] = []

    @classmethod
    def encode(cls, text: str) -> list[int]:
        """The ids of TEXT's space-separated words (new words join the vocabulary)."""
        out = []
        for word in text.split(" "):
            if word not in cls.vocabulary:
                cls.vocabulary.append(word)
            out.append(cls.vocabulary.index(word))
        return out

    async def tokenize(self, text: str) -> list[int]:
        """TEXT's word ids, as the server's /tokenize would give token ids."""
        return self.encode(text)

    async def detokenize(self, ids: Sequence[int]) -> str:
        """The words of IDS joined by spaces."""
        return " ".join(self.vocabulary[i] for i in ids)

    async def context_window(self) -> int | None:
        """The window this instance was given (None: the model does not say)."""
        return self.window


@dataclass
class WordTokens(_Words):
    """A tokenizer whose tokens are words, with the context window it reports.

    Give it where a graph needs a tokenizer to count or cut a prompt (FB-RAG's `token_lm=`):
    `WordTokens(window=64)` makes a 64-word model, so a test can force a long context to be
    cut by writing one of more than 64 words."""

    window: int | None = None
    model: str = "scripted-words"


@dataclass
class ScriptedSampler(_Words):
    """FB-RAG's light LM: every sample request gets the scripted texts (cycled to n); its
    words are its tokens, with the context window it reports.

    `ScriptedSampler(["Kelmor is on the Vedria."])` as FB-RAG's `light_lm=` makes every sample
    that rationale, so a test chooses which chunks its words score highest; `prompts` and
    `calls` record each sample request (n, max_tokens, temperature, top_p, top_k, seed)."""

    texts: list[str]
    window: int | None = None
    model: str = "scripted-light"
    prompts: list[str] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)

    async def sample(self, prompt: str, n: int, max_tokens: int, *, temperature: float,
                     top_p: float, top_k: int, seed: int | None, separate: bool = False,
                     stop: Sequence[str] = ()):
        """N of the scripted texts, with the counts the server would report."""
        from activerag.serving.token_lm import Samples

        self.prompts.append(prompt)
        self.calls.append({"n": n, "max_tokens": max_tokens, "temperature": temperature,
                           "top_p": top_p, "top_k": top_k, "seed": seed, "separate": separate,
                           **({"stop": list(stop)} if stop else {})})
        texts = [self.texts[i % len(self.texts)] for i in range(n)]
        return Samples(texts, len(prompt.split()), sum(len(t.split()) for t in texts),
                       n if separate else 1)


def last_turn(prompt: str) -> str:
    """The test case's own part of a ChatML PROMPT (after its last user marker): what a check
    of "no documents given" reads, as the exemplars before it carry documents of their own."""
    return prompt.rsplit("<|im_start|>user", 1)[-1]
