"""Pure decisions of the shared sentence loop (nodes/loop.py) and its gates: whether to retrieve
(FLARE §3.2.1), masking a draft into a query (§3.2.2), interleaving rankings, and where an
answer ends. The FLARE members' own are nodes/flare/logic.py's."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Literal

from langchain_core.documents import Document

from activerag.answers import find_answer

# (token text, probability, start offset in the sentence)
TokenProb = tuple[str, float, int]
MaskUnit = Literal["token", "word"]


def should_retrieve(probs: Sequence[float], theta: float) -> bool:
    """FLARE §3.2.1: retrieve if any token has probability below theta.

    theta=0 never retrieves and theta=1 always does, even for a draft whose every token
    has probability exactly 1.0 (the paper's two ends of the scale).
    """
    if theta <= 0.0:
        return False
    if theta >= 1.0:
        return True
    return any(p < theta for p in probs)


def word_starts(tokens: Sequence[TokenProb]) -> list[bool]:
    """Whether each token begins a word: the first one, and any that starts with whitespace."""
    return [i == 0 or t[0][:1].isspace() for i, t in enumerate(tokens)]


def _words(tokens: Sequence[TokenProb]) -> list[range]:
    """Token index ranges of the words of a draft (punctuation joins the word it follows)."""
    starts = [i for i, first in enumerate(word_starts(tokens)) if first]
    return [range(a, b) for a, b in zip(starts, [*starts[1:], len(tokens)], strict=True)]


def word_key(word: str) -> str:
    """A word as compared with the question's words: lower case, no surrounding punctuation."""
    return word.strip().strip(string.punctuation).lower()


def question_words(question: str) -> frozenset[str]:
    """The words of the question x, as word_key makes them."""
    return frozenset(k for w in question.split() if (k := word_key(w)))


def masked_query(tokens: Sequence[TokenProb], beta: float, unit: MaskUnit = "token",
                 keep: frozenset[str] = frozenset()) -> str:
    """FLARE §3.2.2 implicit query: the draft with tokens of probability below beta removed.

    unit="word" removes a whole word when any of its tokens is below beta, so no fragment of a
    word is left ("eselin"); a word whose word_key is in KEEP (the question's words) is never
    removed. A removed run leaves one space so that the words on either side stay apart.
    """
    masked = mask_flags(tokens, beta, unit, keep)
    parts: list[str] = []
    gap = False
    for (text, _, _), hide in zip(tokens, masked, strict=True):
        if hide:
            gap = True
            continue
        if gap and parts and not text[:1].isspace():
            parts.append(" ")
        parts.append(text)
        gap = False
    return " ".join("".join(parts).split())


def mask_flags(tokens: Sequence[TokenProb], beta: float, unit: MaskUnit = "token",
               keep: frozenset[str] = frozenset()) -> list[bool]:
    """Whether masked_query removes each token of the draft (same arguments)."""
    masked = [p < beta for _, p, _ in tokens]
    for word in _words(tokens):
        if keep and word_key("".join(tokens[i][0] for i in word)) in keep:
            hide = False
        elif unit == "word":
            hide = any(masked[i] for i in word)
        else:
            continue
        for i in word:
            masked[i] = hide
    return masked


def interleave(rankings: Sequence[Sequence[Document]], k: int) -> list[Document]:
    """Round-robin merge of several rankings into one, without duplicates, cut at K."""
    seen: set[str] = set()
    out: list[Document] = []
    depth = max((len(r) for r in rankings), default=0)
    for rank in range(depth):
        for ranking in rankings:
            if rank < len(ranking):
                doc = ranking[rank]
                key = doc.id or doc.page_content
                if key not in seen:
                    seen.add(key)
                    out.append(doc)
                    if len(out) == k:
                        return out
    return out


def answer_end(text: str, spans: Sequence[tuple[int, int]], complete: bool,
               final_only: bool = False) -> int | None:
    """Where an answer should end: after the first sentence that gives the answer.

    SPANS are TEXT's sentences. None while there is no answer sentence (with FINAL_ONLY, no
    "final answer is"), or while it is the last sentence of a text that may still grow (not
    COMPLETE, no line break after it).
    """
    match = find_answer(text, final_only)
    if match is None or not match.group(1).strip():
        return None  # "So the answer is" with the answer still to come
    for i, (_, end) in enumerate(spans):
        if end > match.start():
            if complete or i + 1 < len(spans) or "\n" in text[end:]:
                return end
            return None
    return None
