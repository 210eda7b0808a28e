"""What every graph of the family shares: the state schemas and the retry policy."""

from __future__ import annotations

from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy

from activerag.context import FlareContext
from activerag.errors import LMServerUnreachable
from activerag.nodes import common
from activerag.nodes.parts import Parts
from activerag.serving.lm import LMServerError
from activerag.state import FlareInput, FlareOutput, FlareState

# Transient server trouble (restarts, 5xx) is retried; bad requests are not.
LM_RETRY = RetryPolicy(max_attempts=3, initial_interval=1.0,
                       retry_on=(LMServerError, LMServerUnreachable))


def new_graph() -> StateGraph[FlareState, FlareContext, FlareInput, FlareOutput]:
    """An empty graph with the family's state, context, input and output schemas.

    Input is just the question and output the answer with its trace, so every graph drops
    into a larger app as a subgraph node.
    """
    return StateGraph(FlareState, context_schema=FlareContext, input_schema=FlareInput,
                      output_schema=FlareOutput)


def add_start(g: StateGraph[FlareState, FlareContext, FlareInput, FlareOutput], parts: Parts,
              first: str) -> None:
    """Wire START -> begin -> [retrieve_input ->] FIRST: q_1 = x when ctx.initial_retrieval."""
    g.add_node("begin", common.begin)
    g.add_node("retrieve_input", common.make_retrieve_input(parts))
    g.add_edge(START, "begin")
    g.add_conditional_edges("begin", common.route_after_begin,
                            {"retrieve_input": "retrieve_input", "next": first})
    g.add_edge("retrieve_input", first)
