"""The chat model an agent talks to: LangChain's ChatOpenAI on the run's vLLM server."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from activerag.context import ServingContext
from activerag.serving.lm import VLLMClient
from activerag.serving.security import api_key


def chat_model(ctx: ServingContext, **kwargs: Any) -> Any:
    """A ChatOpenAI for CTX's server and model (the served one when CTX names none), greedy.
    The server must parse tool calls: started with server.TOOL_CALL_ARGS."""
    from langchain_openai import ChatOpenAI

    model = ctx.model or VLLMClient(ctx.base_url.split(",")[0]).model
    return ChatOpenAI(base_url=ctx.base_url.split(",")[0], model=model,
                      api_key=SecretStr(api_key() or "EMPTY"),
                      **{"temperature": 0.0, "max_retries": 0, **kwargs})
