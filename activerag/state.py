"""Graph state: what flows between nodes, with reducers in the types."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

# Counters summed over a run; `begin` resets them (and the trace) so that a second run on the
# same LangGraph thread starts clean.
COUNTERS = ("lm_calls", "generated_tokens", "prompt_tokens", "retrievals", "retrieval_steps")

class Costs(TypedDict, total=False):
    """What a run cost, as every method's output reports it: the one counter set (COUNTERS)
    and the titles retrieved; SummedCosts is the same set as the states sum it."""

    lm_calls: int  # LM requests made
    generated_tokens: int  # tokens generated, kept or not
    prompt_tokens: int  # prompt tokens sent to the LM
    retrievals: int  # retriever calls
    retrieval_steps: int  # times documents were retrieved, the question's included
    retrieved_titles: list[str]  # titles of every document retrieved, in order


class SummedCosts(TypedDict, total=False):
    """Costs as a state holds them: each node's update adds to the run's totals."""

    lm_calls: Annotated[int, operator.add]
    generated_tokens: Annotated[int, operator.add]
    prompt_tokens: Annotated[int, operator.add]
    retrievals: Annotated[int, operator.add]
    retrieval_steps: Annotated[int, operator.add]
    retrieved_titles: Annotated[list[str], operator.add]


# (token text, probability, start offset in its text)
TokenProb = tuple[str, float, int]


class RerankEntry(TypedDict):
    """One candidate document of a reranked retrieval (SeaKR-lite) and how it scored."""

    doc_id: str  # the document's id
    title: str  # its title
    rank: int  # its position in the retriever's pool, from 0
    entropy: float | None  # mean token entropy (nats) of its pseudo-generation (None: empty)
    tokens: int  # tokens of its pseudo-generation
    kept: int | None  # its position among the kept documents, from 0 (None: dropped)


class StepTrace(TypedDict):
    """One accepted unit of the answer (a sentence, a window, a segment) and how it was decided."""

    index: int  # position of the unit in the answer, from 0
    draft: str  # the temporary next sentence (look-ahead methods), else the unit itself
    draft_tokens: list[tuple[str, float]]  # (token, probability) of the draft
    min_prob: float | None  # lowest token probability of the draft (None: no tokens)
    retrieved: bool  # whether this unit was generated from documents retrieved for it
    queries: list[str]  # queries formulated for this unit
    fallback: bool  # a query was empty or matched nothing, so the question x was searched
    doc_ids: list[str]  # ids of the documents the unit was conditioned on
    doc_titles: list[str]  # their titles
    sentence: str  # the accepted unit
    rerank: NotRequired[list[RerankEntry]]  # a reranked retrieval's pool, in retrieval order
    why: NotRequired[dict[str, Any]]  # the trigger's or estimator's values behind `retrieved`
    redrafted: NotRequired[bool]  # retrieved the draft's own documents: the draft was kept


class Step(TypedDict, total=False):
    """Working area of the unit being decided; reset when it is accepted."""

    draft: str  # temporary next sentence (look-ahead methods)
    tokens: list[TokenProb]  # tokens of the draft
    tops: list[tuple[float, ...]]  # each draft token's top logprobs (when the trigger asks)
    finished: bool  # the model ended the answer after the draft
    complete: bool  # the draft ends where its sentence ends (not cut short by its budget)
    fire: bool  # retrieval fired for this unit
    redrafted: bool  # the retrieval brought back the draft's documents: the draft is the unit
    queries: list[str]  # queries formulated for this unit
    fallback: bool  # a query was empty or matched nothing, so the question x was searched
    documents: list[Document]  # documents retrieved for this unit (FLARE §2.3)
    rerank: list[RerankEntry]  # how a reranked retrieval scored its pool (SeaKR-lite)
    why: dict[str, Any]  # the values behind `fire` (a gate that explains itself), traced
    keep: str  # the draft's text kept before the word a trigger fired at (ETC, DRAGIN-lite)
    samples: list[str]  # answers sampled for the question (the lexsim estimator compares them)
    answer_trace: list[StepTrace]  # the gated graph: the answer without documents, by sentence
    seen: list[Document]  # documents in the prompt of the unit that will be accepted
    sentence: str  # the generated unit (regenerated sentence, window, segment)
    sentence_tokens: list[TokenProb]  # its tokens
    sentence_finished: bool  # the model ended the answer after it
    sentence_complete: bool  # the unit ends where it should (not cut short by its budget)
    emitted: list[str]  # queries the generation itself asked for (self-ask, FLARE-instruct)
    searched: bool  # FLARE-instruct: the unit ended in a search (an empty one too)
    ban_search: bool  # FLARE-instruct: forbid "[" in this unit (a search just happened)
    suffix: str  # text the answer takes after the unit (self-ask's "Intermediate answer:")
    new: bool  # in an update: start a fresh step holding only this update's other keys


def merge_step(old: Step | None, new: Step | None) -> Step:
    """Update the working step; an update marked `new` (or an empty one) starts a fresh step."""
    if not new:
        return {}
    if new.get("new"):
        return {k: v for k, v in new.items() if k != "new"}  # type: ignore[return-value]
    return {**(old or {}), **new}


class Source(TypedDict):
    """A retrieved document an answer may cite, as a method's output `sources` lists it."""

    id: str  # the document's id
    title: str  # its title
    text: str  # its text, as the prompts saw it


Decision = dict[str, Any]
"""What a node decided, as its update shows it (Studio, the run page): "node" names it; the
other keys are the node's own (docs/studio.md lists each node's)."""


class FlareInput(TypedDict):
    """What a caller passes in."""

    question: str  # the user input x


class FlareOutput(Costs):
    """What a caller gets back."""

    answer: str  # the accepted sentences, joined
    trace: list[StepTrace]  # one entry per accepted sentence
    answer_tokens: NotRequired[int]  # tokens in the answer
    sources: NotRequired[list[Source]]  # documents retrieved, each once, first-retrieved first
    decision: NotRequired[Decision]  # what the last node decided (each node's update shows its)


class FlareState(SummedCosts):
    """Internal state of the FLARE family of graphs."""

    question: str  # the user input x
    answer: NotRequired[str]  # accepted text so far, y_<t, exactly as generated
    trace: NotRequired[Annotated[list[StepTrace], operator.add]]  # accepted sentences
    step: NotRequired[Annotated[Step, merge_step]]  # the unit being decided
    input_documents: NotRequired[list[Document]]  # D_x, retrieved with the question
    documents: NotRequired[list[Document]]  # the last retrieved documents (kept in prompts)
    answer_tokens: NotRequired[int]  # tokens in the accepted answer
    done: NotRequired[bool]  # generation has ended
    sources: NotRequired[list[Source]]  # documents retrieved so far, each once, in order
    decision: NotRequired[Decision]  # what the last node decided (Studio shows each node's)


class MessagesInput(TypedDict):
    """What a chat app passes to a method's messages adapter (graphs/messages.py), and gets back
    with the answer appended: LangGraph's MessagesState."""

    messages: Annotated[list[AnyMessage], add_messages]  # the conversation, oldest first


class MessagesAdapterState(MessagesInput, total=False):
    """Internal state of the messages adapter: the question taken from the messages, the
    method's output for it, and the follow-up's rewrite."""

    question: str  # the question the method answers (the standalone rewrite when there is one)
    output: dict[str, Any]  # the method's whole output
    rewrite: dict[str, Any]  # the follow-up, its standalone question and what rewriting cost
