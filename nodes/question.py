"""The question a run starts from: every graph's start node refuses one that shows nothing."""

from __future__ import annotations

import unicodedata

from activerag.errors import EmptyQuestion

INVISIBLE = frozenset({"Cf", "Zs", "Cc"})
"""Unicode categories that show nothing: format characters (zero-width space and joiners, the
BOM, direction marks), space separators, control characters."""


def checked_question(raw: str | None) -> str:
    """RAW without surrounding whitespace; EmptyQuestion when none of its characters is
    visible (all whitespace, zero-width, format or control characters)."""
    question = (raw or "").strip()
    if not any(not c.isspace() and unicodedata.category(c) not in INVISIBLE for c in question):
        raise EmptyQuestion("the question is empty (it holds no visible character); pass a "
                            "non-empty 'question'")
    return question
