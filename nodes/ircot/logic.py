"""Pure decisions of IRCoT (Trivedi et al. 2023, §3.1): which retrieved paragraphs join the
collection, when the loop stops, and what the next query is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.documents import Document

from activerag.answers import find_answer

Stop = Literal["answer", "empty", "steps", "tokens"]
QueryStyle = Literal["sentence", "code"]

_REASONING = re.compile(r"(?:so|thus|therefore|hence)\b|that is,", re.IGNORECASE)
"""How a sentence that reasons over facts stated before it begins (the authors' code does not
search with it): So, Thus, Therefore, Hence, "That is,"."""
_ARITHMETIC = re.compile(r"\d[\d,]*(?:\.\d+)? [-+] \d[\d,]*(?:\.\d+)? = \d")
WH_WORDS = frozenset({"who", "what", "when", "where", "why", "which", "how", "does", "is"})
"""Words the authors' code leaves out of every BM25 query."""


def doc_key(doc: Document) -> str:
    """What tells two paragraphs apart: the id ingest gave it, else its text."""
    return doc.id or doc.page_content


def collect(collected: Sequence[Document], found: Sequence[Document],
            cap: int) -> tuple[list[Document], list[Document], int]:
    """IRCoT's retrieve step: FOUND (one query's ranking) joins COLLECTED in rank order, each
    paragraph not collected already while the collection holds fewer than CAP (§3.1: "adds them
    to the collected paragraphs"; the authors' cap). Returns the collection, the paragraphs
    added, and how many found ones were left out."""
    have = {doc_key(d) for d in collected}
    out = list(collected)
    added = []
    for doc in found:
        key = doc_key(doc)
        if key in have or len(out) >= cap:
            continue
        have.add(key)
        out.append(doc)
        added.append(doc)
    return out, added, len(found) - len(added)


def stop_reason(sentence: str, steps: int, max_steps: int, answer_tokens: int,
                max_answer_tokens: int) -> Stop | None:
    """Why the loop ends after SENTENCE, its STEPS-th, or None to go on (§3.1: the sentence
    says "answer is", or the step cap; the authors' code also ends on an empty sentence; every
    method here ends at max_answer_tokens)."""
    if find_answer(sentence) is not None:
        return "answer"
    if not sentence.strip():
        return "empty"
    if steps >= max_steps:
        return "steps"
    if answer_tokens >= max_answer_tokens:
        return "tokens"
    return None


def is_reasoning(sentence: str) -> bool:
    """Whether SENTENCE reasons over what came before ("So ...", "Thus, ...", "a + b = c")
    rather than stating a fact to search with."""
    return bool(_REASONING.match(sentence.strip()) or _ARITHMETIC.search(sentence))


def without_wh_words(text: str) -> str:
    """TEXT without its wh-words and "is"/"does", its words one space apart."""
    return " ".join(w for w in text.split() if w.lower() not in WH_WORDS)


def question_query(question: str, style: QueryStyle) -> str:
    """The first query: the question (§3.1), without its wh-words in the code's style."""
    return question if style == "sentence" else without_wh_words(question)


def next_query(sentences: Sequence[str], question: str, style: QueryStyle) -> str:
    """The query after SENTENCES (the chain so far): the last sentence (§3.1: "uses the last
    generated CoT sentence as a query"), or in the code's style the last one that states a
    fact, else the question, without wh-words."""
    if style == "sentence":
        return " ".join(sentences[-1].split()) if sentences else question
    facts = [s for s in sentences if s.strip() and not is_reasoning(s)]
    return without_wh_words(" ".join(facts[-1].split()) if facts else question)


def fewer_shots(shots: int) -> int | None:
    """Exemplars to try after a prompt with SHOTS did not fit the window: one fewer, the first
    dropped (the authors' code); None when none was left to drop."""
    return shots - 1 if shots > 0 else None
