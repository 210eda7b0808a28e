"""What the nodes of every family share: the update type, the node types, the question check,
the cost counters of LM calls and the start of a clean run."""

from __future__ import annotations

import unicodedata
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeAlias, TypeVar

from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from activerag.errors import EmptyQuestion
from activerag.serving.generation import Generation
from activerag.serving.lm import text_sink
from activerag.state import COUNTERS

Update = dict[str, Any]
"""A node's partial state update."""
S = TypeVar("S")
C = TypeVar("C")
Node: TypeAlias = Callable[[S, Runtime[C]], Awaitable[Update] | Update]
"""A node of a graph with state S and context C (async or not): Node[FlareState, FlareContext]
is FLARE's. Every graph builder takes its swappable nodes typed so."""

INVISIBLE = frozenset({"Cf", "Zs", "Cc"})
"""Unicode categories that show nothing: format characters (zero-width space and joiners, the
BOM, direction marks), space separators, control characters."""


def visible(text: str) -> bool:
    """Whether TEXT shows any character: one that is neither whitespace nor INVISIBLE."""
    return any(not c.isspace() and unicodedata.category(c) not in INVISIBLE for c in text)


def checked_question(raw: str | None) -> str:
    """RAW without surrounding whitespace; EmptyQuestion when none of its characters is
    visible (all whitespace, zero-width, format or control characters), or with a pointer to
    the messages adapter when there is no question at all (a chat app's state has none)."""
    if raw is None:
        raise EmptyQuestion(
            "the state has no 'question' (a graph whose state is a list of chat messages, such "
            "as MessagesState, passes none to a method added as its node): add the method "
            "with activerag.graphs.messages.for_messages(METHOD), which asks the latest human "
            "message, or pass {'question': ...}")
    question = raw.strip()
    if not visible(question):
        raise EmptyQuestion("the question is empty (it holds no visible character); pass a "
                            "non-empty 'question'")
    return question


def fresh_run(state: Any, *, summed: bool = True, **fields: Any) -> Update:
    """The start of every run: the checked question, an empty trace and retrieved titles, zero
    costs, and FIELDS. SUMMED: the state sums its counters (reducers), so they are overwritten,
    not added to, and a second run on the same thread inherits nothing of the first."""
    zero: Callable[[Any], Any] = Overwrite if summed else (lambda v: v)
    return {"question": checked_question(state.get("question")), **fields,
            "trace": zero([]), "retrieved_titles": zero([]),
            **{name: zero(0) for name in COUNTERS}}


def lm_cost(*gens: Generation) -> Update:
    """The cost counters of some LM calls, as a state update."""
    return {"lm_calls": len(gens), "generated_tokens": sum(g.generated_tokens for g in gens),
            "prompt_tokens": sum(g.prompt_tokens for g in gens)}


def node_name() -> str:
    """The name of the graph node running now ("" outside a graph run)."""
    try:
        return str(get_config().get("metadata", {}).get("langgraph_node", ""))
    except RuntimeError:
        return ""


@contextmanager
def streaming_tokens() -> Iterator[None]:
    """Stream the text an LM generates inside the block to the run's caller, piece by piece, as
    custom stream events {"kind": "token", "node": the running node, "text": the piece};
    nothing happens outside a graph run or when the caller does not stream "custom"."""
    try:
        write = get_stream_writer()
    except RuntimeError:
        yield
        return
    node = node_name()
    token = text_sink.set(lambda piece: write({"kind": "token", "node": node, "text": piece}))
    try:
        yield
    finally:
        text_sink.reset(token)
