"""The adaptive app's input, output and state."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from activerag.state import Costs, StepTrace


class AppInput(TypedDict):
    """What a caller of the adaptive QA app passes in."""
    question: str  # the question
    context: NotRequired[str]  # its own long context, if it has one (then FB-RAG answers)


class AppOutput(Costs):
    """What the adaptive QA app gives back: the answer, the route that gave it, and the
    output of every method graph it ran."""
    answer: str  # the answer of the last method that ran
    route: str  # fb_rag, single, or flare (single answered first and was not sure enough)
    confidence: NotRequired[float | None]  # single's geometric-mean token probability
    trace: NotRequired[list[StepTrace]]  # the answering graph's sentences (none for FB-RAG)
    runs: NotRequired[dict[str, dict]]  # each method graph's whole output, by name
    answer_tokens: NotRequired[int]  # tokens in the answer


class AppState(AppOutput, total=False):
    """Internal state of the adaptive QA app (no reducers: each method's node writes the run's
    totals so far, and `start` clears them for a new run on the same thread)."""
    question: str  # the question
    context: str  # its own long context, if any
