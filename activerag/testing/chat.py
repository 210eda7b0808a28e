"""A scripted chat model for agent tests: it calls the tools its script names, with the queries
the script writes, and relays a tool's answer, so that an agent's routing is tested without a
model that must decide well.

    model = ScriptedChatModel([call("flare", "Who founded Zaezum Works?"), RELAY])
    agent = build_agent(model, tools)

A real small model may not call tools at all (docs/agents.md measures it); this one always
does what its script says, and fails the test when the agent asks it for more turns.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

RELAY = "<relay the last tool answer>"
"""A script turn that replies with the text of the latest tool message before its sources."""

_ids = itertools.count()


def call(tool: str, query: str) -> AIMessage:
    """A script turn that calls TOOL with QUERY."""
    return AIMessage(content="", tool_calls=[{"name": tool, "args": {"query": query},
                                              "id": f"call_{next(_ids)}", "type": "tool_call"}])


def relayed(messages: Sequence[BaseMessage]) -> str:
    """The latest tool message's text up to its sources (its error, for a failed call)."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            return str(message.content).split("\n\nSources:")[0].strip()
    raise AssertionError("RELAY in the script, but no tool has answered yet")


class ScriptedChatModel(BaseChatModel):
    """Replies with its script's turns in order (an AIMessage, a string, or RELAY); records the
    messages of every request in `seen`; accepts bound tools and ignores them."""

    script: list[Any]
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        if not self.script:
            raise AssertionError("the scripted chat model has no turn left; last message: "
                                 f"{messages[-1].content!r}")
        turn = self.script.pop(0)
        if turn == RELAY:
            turn = AIMessage(content=relayed(messages))
        elif isinstance(turn, str):
            turn = AIMessage(content=turn)
        return ChatResult(generations=[ChatGeneration(message=turn)])
