"""Any method in a chat app: a graph whose state is a list of messages (LangGraph's
MessagesState, or any state with `messages`) runs the method as one node.

    parent.add_node("flare", for_messages("flare"))

The latest human message is the question (a follow-up rewritten into a standalone question
first, when `rewrite` says so); the answer comes back as an AIMessage whose
`response_metadata["activerag"]` holds the method, the question, the sources, the trace and
the costs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.graphs import registry
from activerag.nodes import messages
from activerag.nodes.base import Node
from activerag.serving.lm import LM
from activerag.state import MessagesAdapterState, MessagesInput


class MethodParts(NamedTuple):
    """A method as the chat adapters run it."""

    name: str  # the method's name (the AIMessage's and the tool's)
    graph: Any  # its compiled graph
    context: Any  # the settings it runs under unless the run's own context is of its class
    pick: messages.ContextFor  # the context of a run, from its runtime


def method_parts(method: str | Any, context: Any = None) -> MethodParts:
    """METHOD, a registered method by name (run under CONTEXT, else its defaults, or the run's
    context of its class; each with the method's own overrides) or a compiled method graph (run
    under CONTEXT, else the run's context of its class, else its class's defaults)."""
    if isinstance(method, str):
        if method not in registry.METHODS:
            raise registry.unknown_method_error([method])
        record = registry.METHODS[method]
        graph, default = registry.method(method, FlareContext())
        if context is not None:  # the method's own settings over the given ones
            if type(context) is record.context:
                context = replace(context, **record.overrides)
            return MethodParts(method, graph, context, messages.context_picker(
                context, record.context, record.overrides))
        return MethodParts(method, graph, default, messages.context_picker(
            default, record.context, record.overrides))
    if not hasattr(method, "ainvoke"):
        raise ActiveRagError(f"{method!r} is neither a method name nor a compiled graph; pass "
                             f"one of {', '.join(registry.METHODS)} or a method's graph")
    name = getattr(method, "name", None) or "method"
    if context is not None:
        return MethodParts(name, method, context, messages.context_picker(context))
    kind = getattr(method, "context_schema", None)
    default = kind() if kind else None
    return MethodParts(name, method, default, messages.context_picker(default, kind))


def for_messages(method: str | Any, *, context: Any = None,
                 rewrite: bool | Node[MessagesAdapterState, Any] = False, lm: LM | None = None,
                 name: str | None = None, checkpointer: Checkpointer = None
                 ) -> CompiledStateGraph[Any, Any, Any, Any]:
    """METHOD (a registered name or a compiled method graph) as a graph over messages.

    CONTEXT: the settings the method runs under (default: the run's own context when it is the
    method's context class, else the method's defaults). REWRITE: True puts the LM's follow-up
    rewrite (nodes/messages.make_rewrite, with LM or the context's server) before the method, a
    node of your own replaces it; off by default, so that a question asks exactly what the
    user wrote, with no extra LM request (an agent's chat model writes standalone tool queries
    itself). NAME: the compiled graph's name (default: the method's).
    """
    label, graph, default, context_for = method_parts(method, context)
    g: StateGraph[Any, Any, Any, Any] = StateGraph(
        MessagesAdapterState, context_schema=type(default) if default is not None else None,
        input_schema=MessagesInput,
        output_schema=MessagesInput)
    g.add_node("take_question", messages.take_question)
    g.add_node("answer", messages.make_answer(graph, context_for))
    g.add_node("reply", messages.make_reply(label))
    g.add_edge(START, "take_question")
    if rewrite:
        node = messages.make_rewrite(context_for, lm) if rewrite is True else rewrite
        g.add_node("rewrite", node)
        g.add_edge("take_question", "rewrite")
        g.add_edge("rewrite", "answer")
    else:
        g.add_edge("take_question", "answer")
    g.add_edge("answer", "reply")
    g.add_edge("reply", END)
    return g.compile(name=name or label, checkpointer=checkpointer)
