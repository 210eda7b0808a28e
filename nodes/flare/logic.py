"""Pure decisions of the FLARE family's own members: explicit FLARE's low-confidence spans
(§3.2.2), the previous-window query (Table 4), self-ask's follow-ups and FLARE-instruct's
searches. The shared loop's (gating, masking, interleaving, the answer's end) are
nodes/loop_logic.py's."""

from __future__ import annotations

from collections.abc import Sequence

from activerag.nodes.loop_logic import TokenProb, word_starts


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
