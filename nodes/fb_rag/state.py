"""FB-RAG's graph state, its input and output, and the chunks a run saw."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from typing_extensions import TypedDict

from activerag.state import Costs, Source, SummedCosts


class FBRagInput(TypedDict):
    """What a caller of the FB-RAG graphs passes in."""

    question: str  # the question
    context: NotRequired[str]  # its own long context; absent: stage I retrieves from the store


class ChunkInfo(TypedDict):
    """One chunk of the context as the run saw it."""

    index: int  # position among the context's chunks
    start: int  # first word of the context it covers
    end: int  # one past its last word
    text: str  # the chunk


class FBRagOutput(Costs):
    """What a caller of the FB-RAG graphs gets back."""

    answer: str  # the reader's answer
    route: str  # the path that answered: fb_rag, op_rag, vanilla_rag, long_context
    chunks: int  # chunks in the context
    recall: NotRequired[list[int]]  # stage I: chunk positions the light LM read (FB-RAG)
    samples: NotRequired[list[str]]  # stage II: the light LM's samples, as generated
    scores: NotRequired[list[float]]  # every chunk's score in the ranking that chose
    selected: list[int]  # chunk positions the reader read, in the order it read them
    selected_spans: list[tuple[int, int]]  # their word spans in the context
    truncated_tokens: NotRequired[int]  # prompt tokens cut from the middle to fit a window
    stage_seconds: dict[str, float]  # wall time of each stage
    sources: NotRequired[list[Source]]  # documents retrieved for the context (none: given one)


def merge_seconds(old: dict[str, float] | None, new: dict[str, float] | None) -> dict[str, float]:
    """Stage times: each update adds its stages' seconds (an empty update resets them)."""
    if not new:
        return {}
    out = dict(old or {})
    for k, v in new.items():
        out[k] = out.get(k, 0.0) + v
    return out


class FBRagState(SummedCosts):
    """Internal state of the FB-RAG graphs."""

    question: str  # the question
    context: NotRequired[str]  # its long context (built from the store when not given)
    chunk_list: NotRequired[list[ChunkInfo]]  # the context's chunks, in order
    chunks: NotRequired[int]  # how many
    question_scores: NotRequired[list[float]]  # BM25 of every chunk for the question
    recall: NotRequired[list[int]]  # stage I chunks (original order)
    samples: NotRequired[list[str]]  # stage II samples
    scores: NotRequired[list[float]]  # the ranking's score of every chunk
    selected: NotRequired[list[int]]  # chunks the reader reads, in reading order
    selected_spans: NotRequired[list[tuple[int, int]]]  # their word spans
    answer: NotRequired[str]  # the reader's answer
    route: NotRequired[str]  # the path that answered
    truncated_tokens: NotRequired[Annotated[int, operator.add]]  # cut to fit windows
    stage_seconds: NotRequired[Annotated[dict[str, float], merge_seconds]]  # time per stage
    sources: NotRequired[list[Source]]  # documents retrieved for the context (none: given one)
