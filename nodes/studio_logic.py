"""Pure logic of what the nodes show (Studio, the run page, a caller's stream): the sources an
answer may cite and the draft with its masked tokens marked."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from activerag.state import Source

MARK = "~~"
"""What encloses a run of masked tokens in a marked draft (Markdown's strikethrough: the words
the query leaves out)."""


def source_of(doc: Document) -> Source:
    """DOC as a citable source: its id, title and text."""
    return {"id": doc.id or str(doc.metadata.get("id", "")),
            "title": str(doc.metadata.get("title", "")), "text": doc.page_content}


def add_sources(old: Sequence[Source], docs: Sequence[Document]) -> list[Source]:
    """OLD followed by the DOCS not in it yet, each document once (by id; by text when it has
    no id), in the order first retrieved."""
    out = list(old)
    seen = {s["id"] or s["text"] for s in out}
    for doc in docs:
        source = source_of(doc)
        key = source["id"] or source["text"]
        if key not in seen:
            seen.add(key)
            out.append(source)
    return out


def marked_draft(tokens: Sequence[tuple[str, float, int]], masked: Sequence[bool]) -> str:
    """The draft's text with each run of masked tokens enclosed in MARK, the whitespace before
    the run left outside it: "Alpha was born in ~~Gepu.~~"."""
    out: list[str] = []
    inside = False
    for (text, _, _), hide in zip(tokens, masked, strict=True):
        if hide and not inside:
            lead = text[:len(text) - len(text.lstrip())]
            out += [lead, MARK, text[len(lead):]]
            inside = True
            continue
        if inside and not hide:
            out.append(MARK)
            inside = False
        out.append(text)
    if inside:
        out.append(MARK)
    return "".join(out)
