"""Any method as a LangChain tool that a chat model calls: `as_tool("flare")`.

The tool's one argument is the question; it answers with the method's answer and its numbered
sources (the content the chat model reads) and hands the method, sources, trace and costs to
the caller as the ToolMessage's artifact. A query that shows nothing comes back to the agent as
a tool error message (the agent's run goes on and it may ask again); a server that does not
answer is an error for the person running the agent, and ends the run.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from activerag.errors import EmptyQuestion
from activerag.graphs import registry
from activerag.graphs.messages import method_parts
from activerag.nodes.base import checked_question
from activerag.nodes.messages_logic import cited, reply_metadata


class MethodQuery(BaseModel):
    """What a method tool is called with."""

    query: str = Field(description="The question to answer, written out in full so that it "
                                   "reads on its own (names, not pronouns).")


def tool_description(method: str) -> str:
    """What the tool of registered METHOD says it does: the registry's summary, plain."""
    record = registry.METHODS[method]
    summary = record.summary.replace("`", "")
    return (f"Answers a question of fact from the document store with {method} "
            f"({record.family}), citing the documents it used. How it searches: it {summary}.")


def as_tool(method: str | Any, *, name: str | None = None, description: str | None = None,
            context: Any = None) -> BaseTool:
    """METHOD (a registered name or a compiled method graph) as an async LangChain tool named
    NAME (default: the method's), described by DESCRIPTION (default: the registry's summary),
    run under CONTEXT (default: the method's own settings). Its output is content and artifact:
    the answer with its sources, and {"method", "question", "sources", "trace", "costs"}."""
    label, graph, ctx, _pick = method_parts(method, context)
    if description is None:
        description = (tool_description(label) if label in registry.METHODS else
                       f"Answers a question of fact from the document store with {label}.")

    async def answer(query: str) -> tuple[str, dict[str, Any]]:
        try:
            question = checked_question(query)
        except EmptyQuestion as exc:
            raise ToolException(f"{exc}: call {name or label} again with the question written "
                                "out in full") from exc
        output = await graph.ainvoke({"question": question}, context=ctx)
        meta = reply_metadata(label, question, output)
        return cited(str(output.get("answer", "")), meta["sources"]), meta

    return StructuredTool.from_function(
        coroutine=answer, name=name or label, description=description, args_schema=MethodQuery,
        response_format="content_and_artifact", handle_tool_error=True)

