"""REPLUG's graph state, output and trace."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from langchain_core.documents import Document
from typing_extensions import TypedDict

from activerag.state import Costs, Source, SummedCosts


class ReplugTrace(TypedDict):
    """One sentence of a REPLUG answer and how sure the ensemble was of its tokens."""

    index: int  # position of the sentence in the answer, from 0
    sentence: str  # the sentence
    tokens: list[tuple[str, float]]  # (token text, lower bound of its mixture probability)
    certified: float  # share of its tokens no other token could have beaten (1.0: exact)
    doc_ids: list[str]  # the ensembled documents
    doc_titles: list[str]  # their titles
    weights: list[float]  # λ(d, x) of each document
    candidates: NotRequired[list[tuple[str, float]]]  # answer modes: each answer and its score


class ReplugOutput(Costs):
    """What a caller of a REPLUG graph gets back (FLARE's output, REPLUG's trace)."""

    answer: str  # the answer
    trace: list[ReplugTrace]  # one entry per sentence (answer modes: one entry)
    answer_tokens: NotRequired[int]  # tokens in the answer
    certified: NotRequired[float]  # share of answer tokens the top-N view made exact
    cut_documents: NotRequired[list[str]]  # a note per document cut to fit the context window
    sources: NotRequired[list[Source]]  # the ensembled documents, each once, in retrieval order


class ReplugState(SummedCosts):
    """Internal state of the REPLUG graphs."""

    question: str  # the user input x
    documents: NotRequired[list[Document]]  # the k retrieved documents, with scores
    weights: NotRequired[list[float]]  # λ(d, x)
    prompts: NotRequired[list[list[int]]]  # token ids of each document's prompt P(d, x)
    answer_ids: NotRequired[list[int]]  # tokens decided so far
    text: NotRequired[str]  # their text
    sentences: NotRequired[int]  # sentences of the text certainly complete
    offsets: NotRequired[list[int]]  # where each decided token starts in text
    lows: NotRequired[list[float]]  # lower bound of each decided token's mixture probability
    exact: NotRequired[list[bool]]  # whether each decided token was certified
    proposals: NotRequired[Annotated[list[dict], operator.add]]  # this round's look-aheads
    candidates: NotRequired[Annotated[list[dict], operator.add]]  # answer modes: y_d per d
    answer: NotRequired[str]  # the traced sentences
    answer_tokens: NotRequired[int]  # tokens in the answer
    done: NotRequired[bool]  # generation has ended
    certified: NotRequired[float]  # share of answer tokens that were certified
    trace: NotRequired[Annotated[list[ReplugTrace], operator.add]]  # traced sentences
    cut_documents: NotRequired[list[str]]  # a note per document cut to fit the context window
    sources: NotRequired[list[Source]]  # the ensembled documents, each once, in retrieval order
