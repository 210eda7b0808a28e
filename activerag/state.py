"""Graph state: what flows between nodes, with reducers in the types."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from langchain_core.documents import Document
from typing_extensions import TypedDict


class StepTrace(TypedDict):
    """One accepted sentence and how it was decided."""

    index: int  # position of the sentence in the answer, from 0
    draft: str  # the temporary next sentence
    draft_tokens: list[tuple[str, float]]  # (token, probability) of the draft
    min_prob: float | None  # lowest token probability of the draft (None: no tokens)
    retrieved: bool  # whether the gate fired and the sentence was regenerated
    queries: list[str]  # queries sent to the retriever for this sentence
    doc_ids: list[str]  # ids of the documents the final sentence was conditioned on
    doc_titles: list[str]  # their titles
    sentence: str  # the accepted sentence


class Step(TypedDict, total=False):
    """Working area of the sentence being decided; emptied when it is accepted."""

    draft: str  # temporary next sentence
    tokens: list[tuple[str, float, int]]  # (token, probability, start offset) of the draft
    finished: bool  # the model ended the answer after the draft
    fire: bool  # the gate's decision
    queries: list[str]  # formulated queries
    documents: list[Document]  # documents of the current step only (FLARE §2.3)
    sentence: str  # regenerated sentence
    sentence_finished: bool  # the model ended the answer after the regenerated sentence
    sentence_tokens: int  # tokens of the regenerated sentence


def merge_step(old: Step | None, new: Step | None) -> Step:
    """Update the working step; an empty dict resets it."""
    if not new:
        return {}
    return {**(old or {}), **new}


class FlareInput(TypedDict):
    """What a caller passes in."""

    question: str  # the user input x


class FlareOutput(TypedDict):
    """What a caller gets back."""

    answer: str  # the accepted sentences, joined
    trace: list[StepTrace]  # one entry per accepted sentence
    answer_tokens: NotRequired[int]  # tokens in the answer
    lm_calls: NotRequired[int]  # LM requests made
    generated_tokens: NotRequired[int]  # tokens generated, kept or not
    retrievals: NotRequired[int]  # retriever calls


class FlareState(TypedDict):
    """Internal state of the FLARE family of graphs."""

    question: str  # the user input x
    answer: NotRequired[str]  # accepted text so far, y_<t, exactly as generated
    trace: NotRequired[Annotated[list[StepTrace], operator.add]]  # accepted sentences
    step: NotRequired[Annotated[Step, merge_step]]  # the sentence being decided
    answer_tokens: NotRequired[int]  # tokens in the accepted answer
    done: NotRequired[bool]  # generation has ended
    lm_calls: NotRequired[Annotated[int, operator.add]]  # LM requests made
    generated_tokens: NotRequired[Annotated[int, operator.add]]  # tokens generated, kept or not
    retrievals: NotRequired[Annotated[int, operator.add]]  # retriever calls
