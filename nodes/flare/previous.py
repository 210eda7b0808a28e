"""Nodes of the passive multi-time baselines (FLARE §4): the query comes from the past."""

from __future__ import annotations

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.base import Update
from activerag.nodes.flare.logic import window_query
from activerag.state import FlareState


def previous_query(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: q_t = y_{t-1}, the previous sentence or window (ctx.query_tokens widens it)."""
    units = [[t for t, _ in step["draft_tokens"]] for step in state.get("trace", [])]
    query = window_query(units, runtime.context.query_tokens) or state["question"]
    return {"step": {"queries": [query], "fire": True}}
