"""A chat agent whose tools are activerag methods: LangGraph's prebuilt ReAct agent, a chat
model on the same vLLM server, a FLARE tool and a REPLUG tool.

    agent = build_agent()
    out = await agent.ainvoke({"messages": [("user", "Who founded Zaezum Works?")]})

The server must parse the chat model's tool calls: start it with the flags in
activerag.serving.server.TOOL_CALL_ARGS. How often the default model calls a tool, measured:
docs/agents.md.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.types import Checkpointer
from langgraph.warnings import LangGraphDeprecatedSinceV10

from activerag.context import FlareContext
from activerag.graphs import registry
from activerag.graphs.tools import as_tool
from activerag.nodes.chat import chat_model
from activerag.nodes.messages_logic import tool_choice_for
from activerag.nodes.messages_prompts import AGENT_INSTRUCTION

AGENT_METHODS = ("flare", "replug")
"""The methods the example agent calls, one tool each."""


def method_tools(methods: Sequence[str] = AGENT_METHODS,
                 context: FlareContext | None = None) -> list[BaseTool]:
    """One tool per method of METHODS, each under its own settings made from CONTEXT (the
    server, store and prompts; default: the environment's)."""
    base = context or FlareContext()
    return [as_tool(m, context=registry.method(m, base)[1]) for m in methods]


ToolChoice = Literal["required", "auto", "none"]
"""How the served chat model may call tools: "required" (vLLM constrains its reply to a call),
"auto" (it chooses; vLLM parses the call with its tool parser), "none" (no tools bound: it
answers)."""


def served_chat_model(tools: Sequence[BaseTool], context: FlareContext | None = None,
                      first: ToolChoice = "required", then: ToolChoice = "none") -> Any:
    """The agent's model: a ChatOpenAI on CONTEXT's server, made at the first call (asking the
    server for its model then, not when the graph is built), with TOOLS bound under tool
    choice FIRST for a new question and THEN once the tools have answered."""
    made: dict[str, Any] = {}

    async def model(state: Any, runtime: Any) -> Any:
        choice = tool_choice_for(state["messages"], first, then)
        if choice not in made:
            if "chat" not in made:
                made["chat"] = await asyncio.to_thread(chat_model, context or FlareContext())
            made[choice] = (made["chat"] if choice == "none" else
                            made["chat"].bind_tools(list(tools), tool_choice=choice))
        return made[choice]

    return model


def build_agent(model: Any = None, tools: Sequence[BaseTool] | None = None, *,
                context: FlareContext | None = None, first: ToolChoice = "required",
                then: ToolChoice = "none", checkpointer: Checkpointer = None,
                name: str = "agent") -> CompiledStateGraph[Any, Any, Any, Any]:
    """A ReAct agent calling TOOLS (default: FLARE's and REPLUG's, method_tools) with MODEL (a
    LangChain chat model that binds tools; default: ChatOpenAI on CONTEXT's server, under tool
    choice FIRST for each new question and THEN after the tools' answers). The defaults make
    one round of tool calls per question and then an answer: the default model called no tool
    vLLM could parse when left to choose (docs/agents.md); "auto" for both lets a model that
    can call tools chain them."""
    tools = list(tools) if tools is not None else method_tools(context=context)
    with warnings.catch_warnings():
        # its successor, langchain.agents.create_agent, needs the `langchain` package, which
        # activerag does not depend on; the prebuilt agent is langgraph's own until 2.0
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(
            model if model is not None else served_chat_model(tools, context, first, then),
            tools,
            prompt=AGENT_INSTRUCTION, checkpointer=checkpointer, name=name)


graph = build_agent()
