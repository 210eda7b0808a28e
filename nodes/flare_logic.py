"""Pure decisions of FLARE: gating, masking, span extraction, ranking interleave, ends."""

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


def low_confidence_spans(tokens: Sequence[TokenProb], beta: float, sentence: str,
                         merge_gap: int = 0) -> list[str]:
    """FLARE §3.2.2 explicit queries: the spans of the draft made of tokens below beta.

    Low-probability tokens with at most MERGE_GAP confident tokens between them form one span
    (with 3, "University(0.3) of Pennsylvania(0.2)" is one span), and a span grows to whole
    words: a token that continues a word (no leading space) joins the span of its word.
    """
    starts = [t[2] for t in tokens]
    ends = [*starts[1:], len(sentence)]
    first = word_starts(tokens)
    low = [i for i, t in enumerate(tokens) if t[1] < beta]
    groups: list[list[int]] = []
    for i in low:
        if groups and i - groups[-1][1] - 1 <= merge_gap:
            groups[-1][1] = i
        else:
            groups.append([i, i])
    spans: list[tuple[int, int]] = []
    for a, b in groups:
        while a > 0 and not first[a]:
            a -= 1
        while b + 1 < len(tokens) and not first[b + 1]:
            b += 1
        if spans and starts[a] <= spans[-1][1]:
            spans[-1] = (spans[-1][0], ends[b])
        else:
            spans.append((starts[a], ends[b]))
    out = []
    for s, e in spans:
        text = sentence[s:e].strip(" \n\t.,;:!?\"'")
        if text and text not in out:
            out.append(text)
    return out


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


def window_query(units: Sequence[Sequence[str]], n_tokens: int) -> str:
    """Previous-window query (§4, Table 4) from the token texts of the accepted units.

    n_tokens 0: the previous unit; N > 0: the last N generated tokens; -1: all of them.
    """
    if not units:
        return ""
    if n_tokens == 0:
        tokens = list(units[-1])
    else:
        tokens = [t for unit in units for t in unit]
        tokens = tokens if n_tokens < 0 else tokens[-n_tokens:]
    return " ".join("".join(tokens).split())


def last_follow_up(segment: str, marker: str) -> str | None:
    """The question of the last line starting with MARKER ("Follow up:"), if any."""
    for line in reversed(segment.splitlines()):
        line = line.strip()
        if line.startswith(marker):
            return line[len(marker):].strip() or None
    return None


def follow_up_at_end(segment: str, marker: str) -> str | None:
    """The question of SEGMENT's last line when that line holds a follow-up (MARKER, "Follow
    up:"): self-ask pauses for an answer there whether the model stopped at "Intermediate
    answer:" or ended its output after the question (the self-ask authors' loop goes on while
    the last line holds a follow-up). None when the last line holds none, or an empty one."""
    lines = segment.rstrip().splitlines()
    if not lines or marker not in lines[-1]:
        return None
    return lines[-1].split(marker, 1)[1].strip() or None


def split_search(text: str, open_: str, close: str) -> tuple[str, str | None]:
    """FLARE-instruct: the text before a generated "[Search(" and the query inside it.

    The query is None when there is no search and "" for an empty "[Search()]"; it runs to the
    closing ")]" (the stop string, so usually already gone), parentheses inside kept
    ("Kelmor (city)"). The text before the search loses its trailing spaces, so that the
    continuation, which brings its own, leaves no double space.
    """
    at = text.find(open_)
    if at < 0:
        return text, None
    query = text[at + len(open_):]
    if close in query:
        query = query[:query.index(close)]
    return text[:at].rstrip(" "), query.strip()


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
