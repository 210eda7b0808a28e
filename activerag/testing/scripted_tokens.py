"""A scripted token-level LM for unit tests of REPLUG's ensemble: each document has a belief, a
next-token distribution given the answer so far, and the LM answers from the belief of the
document its prompt holds. Tokens are words with their leading space; "" is the end of sequence.

Give a ScriptedTokenLM to `build_replug_graph` as REPLUG's token-level LM (the one its ensemble
asks for token ids, top alternatives and echo scores), with one belief per document keyed by a
word that document alone holds, to test how the ensemble weighs documents that disagree."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from activerag.serving.token_lm import Position, Steps

EOS = ""
"""The end-of-sequence token of a belief's distribution."""
Belief = Callable[[tuple[str, ...]], dict[str, float]]
"""A document's next-token distribution given the answer's tokens so far."""


def says(text: str, prob: float = 0.9, rival: str = " Gepu.") -> Belief:
    """A document that writes TEXT word by word (each word at PROB, RIVAL next), then ends.

    `says("So the answer is Vesk.")` is the belief of a document that answers Vesk; the
    rival takes the rest of each step's mass, so the ensemble has two tokens to weigh."""
    words = [w if i == 0 else " " + w for i, w in enumerate(text.split(" "))]

    def belief(answer: tuple[str, ...]) -> dict[str, float]:
        i = len(answer)
        word = words[i] if i < len(words) and tuple(words[:i]) == answer else EOS
        return {word: prob, rival: (1 - prob) / 2} if word != rival else {word: prob}

    return belief


@dataclass
class ScriptedTokenLM:
    """Answers every request from the belief of the document (by its marker) in the prompt.

    `ScriptedTokenLM({"Vesk": says("So the answer is Vesk."), "Ulm": says("So the answer is
    Ulm.")})` answers a prompt holding the word Vesk from the first belief and one holding Ulm
    from the second: greedy steps with their top alternatives, and echo scores of a given
    continuation. `calls` records each request (its kind, prompt ids and max_tokens)."""

    beliefs: dict[str, Belief]
    model: str = "scripted-tokens"
    calls: list[dict] = field(default_factory=list)
    window: int | None = None
    """The context length it reports (None: it does not say)."""
    _ids: dict[str, int] = field(default_factory=lambda: {EOS: 0})
    _prompts: dict[tuple[int, ...], str] = field(default_factory=dict)

    def _id(self, token: str) -> int:
        return self._ids.setdefault(token, len(self._ids))

    def _token(self, token_id: int) -> str:
        return next(t for t, i in self._ids.items() if i == token_id)

    async def tokenize(self, text: str) -> list[int]:
        """TEXT's word ids; a prompt holding a marker is remembered as that document's."""
        words = text.split(" ")
        ids = [self._id(w if i == 0 else " " + w) for i, w in enumerate(words)]
        marker = next((m for m in self.beliefs if m in text), None)
        if marker is not None:
            self._prompts[tuple(ids)] = marker
        return ids

    async def context_window(self) -> int | None:
        """The context length it was given (None: the model does not say)."""
        return self.window

    async def detokenize(self, ids: Sequence[int]) -> str:
        """The words of IDS joined as they were split (each keeps its leading space)."""
        return "".join(self._token(i) for i in ids)

    def _split(self, prompt: Sequence[int]) -> tuple[Belief, tuple[str, ...]]:
        for known, marker in self._prompts.items():
            if tuple(prompt[:len(known)]) == known:
                answer = tuple(self._token(i) for i in prompt[len(known):])
                return self.beliefs[marker], answer
        raise AssertionError("a prompt the scripted LM never tokenized")

    async def steps(self, prompt: Sequence[int], max_tokens: int, top: int) -> Steps:
        """Greedy continuation of PROMPT from its document's belief, TOP alternatives a step."""
        self.calls.append({"kind": "steps", "prompt": list(prompt), "max_tokens": max_tokens})
        belief, answer = self._split(prompt)
        positions: list[Position] = []
        for _ in range(max_tokens):
            dist = belief(answer)
            ranked = sorted(dist.items(), key=lambda kv: (-kv[1], self._id(kv[0])))[:top]
            word = ranked[0][0]
            positions.append(Position(self._id(word), math.log(ranked[0][1]),
                                      {self._id(t): math.log(p) for t, p in ranked}))
            if word == EOS:
                return Steps(positions, True, len(prompt))
            answer = (*answer, word)
        return Steps(positions, False, len(prompt))

    async def score(self, prompt: Sequence[int], continuation: Sequence[int]) -> list[float]:
        """Each CONTINUATION token's logprob under PROMPT's document's belief (echo scoring)."""
        self.calls.append({"kind": "score", "prompt": list(prompt)})
        belief, answer = self._split(prompt)
        out = []
        for token_id in continuation:
            word = self._token(token_id)
            out.append(math.log(belief(answer).get(word, 1e-9)))
            answer = (*answer, word)
        return out
