"""IRCoT's state types: a step's trace and the graph's state (FLARE's, with the paragraphs
collected)."""

from __future__ import annotations

from typing import NotRequired

from langchain_core.documents import Document

from activerag.state import FlareState, StepTrace


class IRCoTTrace(StepTrace):
    """One IRCoT step (Trivedi et al. 2023, §3.1): the retrieval before it (its query, what it
    added) and the CoT sentence written over every paragraph collected; or the reader's answer.
    doc_ids and doc_titles are the paragraphs in its prompt."""

    role: str  # "reason": a CoT sentence of the loop; "read": the reader's answer (§3.2)
    new_ids: list[str]  # ids of the paragraphs its query added to the collection
    new_titles: list[str]  # their titles
    left_out: int  # paragraphs its query found but did not add: collected already, or past the cap
    stop: str | None  # why the loop ended after it (answer, empty, steps, tokens); None: went on


class IRCoTState(FlareState):
    """Internal state of the IRCoT graph: FLARE's, the paragraphs collected so far and how many
    exemplars fit the window."""

    paragraphs: NotRequired[list[Document]]  # every paragraph collected, in order, up to the cap
    shots: NotRequired[int]  # exemplars in the last prompt that fit the model's window
