"""The chat adapters' prompts (graphs/messages.py, graphs/agent.py): a follow-up rewritten into a
standalone question, and the agent's instruction."""

from __future__ import annotations

from collections.abc import Sequence

from activerag.nodes.prompts import Layout, render

# The chat adapters (graphs/messages.py, graphs/agent.py): a follow-up rewritten into a
# standalone question, and the agent's instruction
REWRITE_INSTRUCTION = (
    "Rewrite the user's last question so that it can be understood without the conversation: "
    "replace pronouns and references with the names they stand for. Reply with the question "
    "alone, on one line."
)
REWRITE_SPEAKERS = {"human": "User", "ai": "Assistant"}
REWRITE_STOPS = ("\n",)
"""The rewrite is its first line."""
REWRITE_MAX_TOKENS = 64


def rewrite_prompt(turns: Sequence[tuple[str, str]], question: str,
                   fmt: Layout = "chatml") -> str:
    """The follow-up rewrite: the conversation's earlier (type, text) TURNS, then QUESTION."""
    said = "\n".join(f"{REWRITE_SPEAKERS.get(kind, kind)}: {text}" for kind, text in turns)
    return render(fmt, REWRITE_INSTRUCTION,
                  [(f"Conversation:\n{said}\n\nLast question: {question}", "")])


AGENT_INSTRUCTION = (
    "You answer questions about the documents in a search tool's store. For every question of "
    "fact, call one of the tools with the question written out in full (names, not pronouns). "
    "Then answer in one or two sentences from the tool's answer and name its sources by title."
)
