"""The messages adapter's steps: take the question from the conversation, rewrite a follow-up
into a standalone question (optional), run the method, reply with an AIMessage that carries the
method's sources, trace and costs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from activerag.context import ServingContext
from activerag.nodes import messages_prompts as prompts
from activerag.nodes.base import Node, Update, lm_cost
from activerag.nodes.messages_logic import (
    earlier_turns,
    latest_question,
    reply_metadata,
    standalone_from,
)
from activerag.nodes.parts import Parts
from activerag.serving.lm import LM
from activerag.state import MessagesAdapterState

ContextFor = Callable[[Runtime[Any]], Any]
"""The context a method runs under, chosen from the run's runtime."""


def context_picker(default: Any, kind: type | None = None,
                   overrides: Mapping[str, Any] | None = None) -> ContextFor:
    """The run's own context when it is of the method's context class KIND (OVERRIDES applied:
    the method's own settings), else DEFAULT; with no KIND, the run's context when it has one.
    A chat app's parent graph rarely runs under a method's context, so DEFAULT is the usual."""

    def pick(runtime: Runtime[Any]) -> Any:
        ctx = runtime.context
        if ctx is not None and (kind is None or type(ctx) is kind):
            return replace(ctx, **overrides) if overrides else ctx
        return default

    return pick


def take_question(state: MessagesAdapterState) -> Update:
    """The question: the latest human message's text (refused when there is none)."""
    return {"question": latest_question(state.get("messages") or []), "rewrite": {}}


def make_rewrite(context_for: ContextFor, lm: LM | None = None) -> Node[MessagesAdapterState,
                                                                         Any]:
    """A node that rewrites a follow-up ("and where was he born?") into a standalone question
    with the LM (LM, else the context's server); a first question is left as it is, unasked."""
    parts = Parts(lm=lm)

    async def rewrite(state: MessagesAdapterState, runtime: Runtime[Any]) -> Update:
        turns = earlier_turns(state.get("messages") or [])
        if not turns:
            return {}
        ctx: ServingContext = context_for(runtime)
        model = await parts.lm_for(ctx)
        gen = await model.generate(
            prompts.rewrite_prompt(turns, state["question"], await parts.layout_for(ctx)),
            max_tokens=prompts.REWRITE_MAX_TOKENS, stop=list(prompts.REWRITE_STOPS))
        standalone = standalone_from(gen.text, state["question"])
        return {"question": standalone,
                "rewrite": {"question": state["question"], "standalone": standalone,
                            **lm_cost(gen)}}

    return rewrite


def make_answer(graph: Any, context_for: ContextFor) -> Node[MessagesAdapterState, Any]:
    """A node that runs the method GRAPH on the question, as a subgraph of this run (its events
    and custom stream events reach the parent's stream), and keeps its whole output."""

    async def answer(state: MessagesAdapterState, runtime: Runtime[Any]) -> Update:
        out = await graph.ainvoke({"question": state["question"]}, context=context_for(runtime))
        return {"output": dict(out)}

    return answer


def make_reply(method: str) -> Node[MessagesAdapterState, Any]:
    """A node that appends the answer as an AIMessage: its text the method's answer, its
    response_metadata["activerag"] the method, the question, the sources, the trace and the
    costs; its usage_metadata the LM tokens."""

    def reply(state: MessagesAdapterState) -> Update:
        output = state.get("output") or {}
        meta = reply_metadata(method, state["question"], output, state.get("rewrite") or None)
        costs = meta["costs"]
        prompt, generated = costs.get("prompt_tokens", 0), costs.get("generated_tokens", 0)
        message = AIMessage(
            content=str(output.get("answer", "")), response_metadata={"activerag": meta},
            usage_metadata={"input_tokens": prompt, "output_tokens": generated,
                            "total_tokens": prompt + generated})
        return {"messages": [message]}

    return reply
