"""What every graph of the family shares: the state schemas and the retry policy."""

from __future__ import annotations

from langgraph.graph import StateGraph
from langgraph.types import RetryPolicy

from activerag.context import FlareContext
from activerag.errors import LMServerUnreachable
from activerag.lm import LMServerError
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
