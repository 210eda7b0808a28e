"""Where an output states its answer, and the SQuAD normalisation answers are compared in:
shared by the run-time nodes (which stop or vote on answers) and the metrics (a leaf module)."""

from __future__ import annotations

import re
import string

# The paper's answer sentence ("So the answer is X.", self-ask's "So the final answer is: X."):
# the answer runs to the end of its line, so "Edward L. Cahn." and "St. Louis" stay whole.
_ANSWER = re.compile(r"\banswer is\b:?[ \t]*([^\n]*)", re.IGNORECASE)
_FINAL_ANSWER = re.compile(r"\bfinal answer is\b:?[ \t]*([^\n]*)", re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def find_answer(text: str, final_only: bool = False) -> re.Match[str] | None:
    """The answer sentence of TEXT: the first "final answer is" (self-ask's and StrategyQA's
    form, so an intermediate "the answer is ..." does not count), else the first "answer is"
    (the authors score the first match); with FINAL_ONLY, only the former."""
    final = _FINAL_ANSWER.search(text)
    if final is not None or final_only:
        return final
    return _ANSWER.search(text)


def extract_answer(text: str, fallback: bool = False) -> str:
    """The answer after the answer sentence's 'answer is' (see find_answer), to the end of its
    line, less one final period.

    Without such a sentence the answer is "" (the authors count it wrong), or with FALLBACK the
    last sentence of the text (for systems whose prompts never ask for the pattern).
    """
    match = find_answer(text)
    if match:
        answer = match.group(1).strip()
        return answer[:-1].rstrip() if answer.endswith(".") else answer
    if not fallback:
        return ""
    lines = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
    return lines[-1].rstrip(".") if lines else ""


def normalize(text: str) -> str:
    """Standard SQuAD normalisation: lower case, no punctuation, articles or extra spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())
