"""Pure decisions of the run page: the path cut into sentences, the draft tokens FLARE's masked
query dropped, and whether a regenerated sentence says something else than its draft."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from activerag.nodes.flare_logic import (
    MaskUnit,
    masked_query,
    question_words,
    word_key,
    word_starts,
)


@dataclass(frozen=True)
class Group:
    """Consecutive path entries [start, end): the steps of SENTENCES (indices into the trace;
    none before the first sentence and after the last)."""

    start: int
    end: int
    sentences: tuple[int, ...] = ()


def sentence_groups(path: Sequence[str], sentences_at: Sequence[int],
                    loop_heads: Collection[str] = ()) -> list[Group]:
    """PATH cut after each entry during which sentence events arrived (SENTENCES_AT[i] of them
    during PATH[i]); the steps before the first LOOP_HEADS node (the node each sentence starts
    at) form a group of their own, and so do the steps after the last sentence."""
    groups: list[Group] = []
    start = done = 0
    for i, count in enumerate(sentences_at[:len(path)]):
        if count:
            groups.append(Group(start, i + 1, tuple(range(done, done + count))))
            start, done = i + 1, done + count
    if start < len(path):
        groups.append(Group(start, len(path)))
    first = groups[0] if groups else None
    if first and first.sentences:
        head = next((i for i in range(first.start, first.end) if path[i] in loop_heads), 0)
        if head > first.start:
            groups[0:1] = [Group(first.start, head), Group(head, first.end, first.sentences)]
    return groups


def masked_flags(tokens: Sequence[tuple[str, float]], beta: float, unit: str = "token",
                 keep: frozenset[str] = frozenset()) -> list[bool]:
    """Which TOKENS FLARE's implicit query drops (§3.2.2: p < beta; with unit "word", every
    token of a word that has one; never a word of KEEP): the marks of masked_query."""
    masked = [p < beta for _, p in tokens]
    starts = [i for i, first in enumerate(word_starts([(t, p, 0) for t, p in tokens])) if first]
    for a, b in zip(starts, [*starts[1:], len(tokens)], strict=True):
        if keep and word_key("".join(t for t, _ in tokens[a:b])) in keep:
            masked[a:b] = [False] * (b - a)
        elif unit == "word":
            masked[a:b] = [any(masked[a:b])] * (b - a)
    return masked


def query_masks(step: Mapping[str, Any], settings: Mapping[str, Any],
                question: str) -> list[bool] | None:
    """The draft tokens of traced STEP that its implicit query dropped, or None where the step
    retrieved with no masked query of the draft (the settings do not reproduce its query: an
    explicit query, the whole draft, a formulate_query of the user's own)."""
    beta = settings.get("beta")
    queries = step.get("queries") or []
    if (not step.get("retrieved") or len(queries) != 1 or not isinstance(beta, int | float)
            or settings.get("query_formulation", "implicit") != "implicit"):
        return None
    tokens = [(str(t), float(p)) for t, p, *_ in step.get("draft_tokens") or []]
    unit: MaskUnit = "word" if settings.get("mask_unit") == "word" else "token"
    keep = question_words(question) if settings.get("keep_question_words") else frozenset()
    query = masked_query([(t, p, 0) for t, p in tokens], float(beta), unit, keep)
    if query != queries[0] and not (not query and queries[0] == question):
        return None
    return masked_flags(tokens, float(beta), unit, keep)


def differs(draft: str, sentence: str) -> bool:
    """Whether SENTENCE (the one kept) has other words than DRAFT; spacing is not a change."""
    return draft.split() != sentence.split()
