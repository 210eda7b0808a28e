"""The chat adapters' pure logic: the question a list of messages asks, the turns before it,
a rewritten follow-up read back, and what a method's output says about its sources and costs.

No LM and no graph here: the messages adapter (nodes/messages.py) and the tool adapter
(graphs/tools.py) call these on the method's output, whatever its family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from activerag.errors import EmptyQuestion
from activerag.nodes.base import checked_question, visible
from activerag.state import COUNTERS

HUMAN, AI = "human", "ai"
"""LangChain's message types (`BaseMessage.type`) of the user's and the assistant's turns."""


class NoHumanMessage(EmptyQuestion):
    """A list of chat messages holds no human message to answer."""


def message_text(message: Any) -> str:
    """The text of MESSAGE (a LangChain message): its string content, or the text blocks of a
    list content joined (images and other blocks left out)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    pieces = []
    for block in content or []:
        if isinstance(block, str):
            pieces.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            pieces.append(str(block.get("text", "")))
    return "".join(pieces)


def _latest_human(messages: Sequence[Any]) -> int:
    """The position of the last human message; NoHumanMessage when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        if getattr(messages[i], "type", None) == HUMAN:
            return i
    kinds = ", ".join(getattr(m, "type", type(m).__name__) for m in messages) or "none"
    raise NoHumanMessage(
        f"the messages hold no human message to answer ({len(messages)} messages: {kinds}); "
        "add the question as a HumanMessage (role 'user') before running the method")


def latest_question(messages: Sequence[Any]) -> str:
    """The question MESSAGES ask: the latest human message's text, checked (EmptyQuestion when
    it shows nothing; NoHumanMessage when no message is human)."""
    return checked_question(message_text(messages[_latest_human(messages)]))


def earlier_turns(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """The conversation before the latest human message, as (type, text) pairs: the user's and
    the assistant's turns that show text (system prompts, tool calls and tool results left
    out). Empty for a first question."""
    turns = []
    for message in messages[:_latest_human(messages)]:
        kind = getattr(message, "type", None)
        text = message_text(message).strip()
        if kind in (HUMAN, AI) and visible(text):
            turns.append((kind, text))
    return turns


_LEADS = ("standalone question:", "rewritten question:", "question:")


def standalone_from(reply: str, question: str) -> str:
    """The standalone question an LM's REPLY holds: its first line showing text, without a
    leading "Question:" label or surrounding quotes; QUESTION itself when the reply shows
    nothing, so a failed rewrite asks the user's own words."""
    for line in reply.splitlines():
        text = line.strip()
        for lead in _LEADS:
            if text.lower().startswith(lead):
                text = text[len(lead):].strip()
                break
        text = text.strip("\"'`“”").strip()
        if visible(text):
            return text
    return question


def _add(found: dict[object, dict[str, Any]], doc_id: str | None, title: str | None,
         text: str | None = None) -> None:
    key: object = doc_id or ("title", title)
    if key not in found:
        found[key] = {"id": doc_id or None, "title": title, "text": text}


def sources_of(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The documents a method's OUTPUT answered from, first-retrieved first, each once, as
    {"id", "title", "text"} (None where the output does not say). The output's own `sources`
    when it has them; else the ids and titles of its trace's steps (FLARE's family, REPLUG,
    IRCoT), of the runs it holds (the app), then any retrieved title not seen yet (id None);
    when none of these, FB-RAG's chunks of the question's own context by position
    ("chunk-3", "words 120-240 of the context")."""
    if output.get("sources") is not None:
        return [{"id": s.get("id"), "title": s.get("title"), "text": s.get("text")}
                for s in output["sources"]]
    found: dict[object, dict[str, Any]] = {}
    for step in output.get("trace") or []:
        for doc_id, title in zip(step.get("doc_ids") or [], step.get("doc_titles") or [],
                                 strict=False):
            _add(found, doc_id, title)
    for run in (output.get("runs") or {}).values():
        for source in sources_of(run):
            _add(found, source["id"], source["title"], source["text"])
    titles = {s["title"] for s in found.values()}
    for title in output.get("retrieved_titles") or []:
        if title not in titles:
            titles.add(title)
            _add(found, None, title)
    if not found:  # FB-RAG's chunks of a context the question brought (nothing retrieved)
        for index, (start, end) in zip(output.get("selected") or [],
                                       output.get("selected_spans") or [], strict=False):
            _add(found, f"chunk-{index}", f"words {start}-{end} of the context")
    return list(found.values())


def costs_of(output: Mapping[str, Any], *more: Mapping[str, Any]) -> dict[str, int]:
    """What the run cost: the output's counters (COUNTERS, and answer_tokens when it has them),
    with each of MORE's counters added (a follow-up's rewrite)."""
    costs = {name: int(output[name]) for name in (*COUNTERS, "answer_tokens") if name in output}
    for extra in more:
        for name in COUNTERS:
            if name in extra:
                costs[name] = costs.get(name, 0) + int(extra[name])
    return costs


def cited(answer: str, sources: Sequence[Mapping[str, Any]]) -> str:
    """ANSWER followed by its numbered sources, one a line, "[1] Title (id)": what a tool hands
    the chat model, so that it can cite them."""
    if not sources:
        return f"{answer.strip()}\n\nSources: none retrieved."
    lines = [f"[{n}] {s.get('title') or 'untitled'}" + (f" ({s['id']})" if s.get("id") else "")
             for n, s in enumerate(sources, 1)]
    return "\n".join([answer.strip(), "", "Sources:", *lines])


def reply_metadata(method: str, question: str, output: Mapping[str, Any],
                   rewrite: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an answer carries besides its text: the method, the question it answered, its
    sources, its trace, its costs (a rewrite's included) and the rewrite when there was one."""
    meta: dict[str, Any] = {"method": method, "question": question,
                            "sources": sources_of(output), "trace": list(output.get("trace") or []),
                            "costs": costs_of(output, *([rewrite] if rewrite else []))}
    if rewrite:
        meta["rewrite"] = dict(rewrite)
    return meta


def tool_choice_for(messages: Sequence[Any], first: str, then: str) -> str:
    """The tool choice of an agent's next model call: FIRST when the latest message is the
    user's (a new question), THEN once tools have answered it."""
    last = messages[-1] if messages else None
    return first if getattr(last, "type", None) == HUMAN else then
