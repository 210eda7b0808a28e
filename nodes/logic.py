"""Pure decisions of FLARE: gating, masking, span extraction, ranking interleave."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

# (token text, probability, start offset in the sentence)
TokenProb = tuple[str, float, int]


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


def masked_query(tokens: Sequence[TokenProb], beta: float) -> str:
    """FLARE §3.2.2 implicit query: the draft with tokens of probability below beta removed.

    A removed run leaves one space so that the words on either side stay apart.
    """
    parts: list[str] = []
    gap = False
    for text, prob, _ in tokens:
        if prob < beta:
            gap = True
            continue
        if gap and parts and not text.startswith((" ", "\n")):
            parts.append(" ")
        parts.append(text)
        gap = False
    return " ".join("".join(parts).split())


def low_confidence_spans(tokens: Sequence[TokenProb], beta: float, sentence: str) -> list[str]:
    """FLARE §3.2.2 explicit queries: the spans of the draft made of tokens below beta.

    Consecutive low-probability tokens form one span, and a span grows to whole words: a token
    that continues a word (no leading space) joins the span of the word it belongs to.
    """
    starts = [t[2] for t in tokens]
    ends = [*starts[1:], len(sentence)]
    word_start = [i == 0 or t[0][:1] in (" ", "\n") for i, t in enumerate(tokens)]
    low = [t[1] < beta for t in tokens]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not low[i]:
            i += 1
            continue
        a = i
        while a > 0 and not word_start[a]:
            a -= 1
        b = i
        while b + 1 < len(tokens) and (low[b + 1] or not word_start[b + 1]):
            b += 1
        if spans and starts[a] <= spans[-1][1]:
            spans[-1] = (spans[-1][0], ends[b])
        else:
            spans.append((starts[a], ends[b]))
        i = b + 1
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


def split_search(text: str, open_: str) -> tuple[str, str | None]:
    """FLARE-instruct: the text before a generated "[Search(" and the query after it."""
    at = text.find(open_)
    if at < 0:
        return text, None
    query = text[at + len(open_):].strip().rstrip(")]").strip()
    return text[:at], query or None
