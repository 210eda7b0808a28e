"""Pure decisions of the run page: the path cut into sentences, the draft tokens FLARE's masked
query dropped, and whether a regenerated sentence says something else than its draft."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from activerag.nodes.loop_logic import MaskUnit, mask_flags, masked_query, question_words


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
        head = next((i for i in range(first.end) if path[i] in loop_heads), 0)
        if head:
            groups[0:1] = [Group(0, head), Group(head, first.end, first.sentences)]
    return groups


def query_masks(step: Mapping[str, Any], settings: Mapping[str, Any], question: str,
                decision: Mapping[str, Any] | None = None) -> list[bool] | None:
    """The draft tokens of traced STEP that its implicit query dropped: those its
    formulate_query DECISION lists as masked where it has one, else those the run's SETTINGS
    mask where they give back the query the step searched with; None where the step retrieved
    with no masked query of the draft (an explicit query, the whole draft, a formulate_query of
    the user's own)."""
    tokens = [(str(t), float(p), 0) for t, p, *_ in step.get("draft_tokens") or []]
    if not step.get("retrieved"):
        return None
    if decision and decision.get("formulation") == "implicit":
        found = aligned(tokens, decision.get("masked") or [])
        if found is not None:
            return found
    beta = settings.get("beta")
    queries = step.get("queries") or []
    if (len(queries) != 1 or not isinstance(beta, int | float)
            or settings.get("query_formulation", "implicit") != "implicit"):
        return None
    unit: MaskUnit = "word" if settings.get("mask_unit") == "word" else "token"
    keep = question_words(question) if settings.get("keep_question_words") else frozenset()
    query = masked_query(tokens, float(beta), unit, keep)
    if query != queries[0] and not (not query and queries[0] == question):
        return None
    return mask_flags(tokens, float(beta), unit, keep)


def aligned(tokens: Sequence[tuple[str, float, int]],
            masked: Sequence[Sequence[Any]]) -> list[bool] | None:
    """Which of TOKENS are the MASKED ones ([text, probability], in draft order), each matched
    to the first token after the last match with its text and probability; None when one
    matches no token."""
    flags = [False] * len(tokens)
    at = 0
    for text, p, *_ in masked:
        while at < len(tokens) and (tokens[at][0] != text or abs(tokens[at][1] - p) > 1e-9):
            at += 1
        if at == len(tokens):
            return None
        flags[at] = True
        at += 1
    return flags


def differs(draft: str, sentence: str) -> bool:
    """Whether SENTENCE (the one kept) has other words than DRAFT; spacing is not a change."""
    return draft.split() != sentence.split()
