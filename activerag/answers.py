"""Where an output states its answer, and the SQuAD normalisation answers are compared in:
shared by the run-time nodes (which stop or vote on answers) and the metrics (a leaf module)."""

from __future__ import annotations

import re
import string
from typing import Literal

AnswerRule = Literal["empty", "whole"]
"""What an output without an answer sentence ("answer is ...") is scored as. "empty": nothing, so
it scores 0 (FLARE's code and most others'). "whole": the output itself, its first line less
enclosing quotes and one final period (IRCoT's and Adaptive-RAG's code: their answer
extractor's `match_all_on_failure: true`, `remove_last_fullstop: true`)."""

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


def extract_answer(text: str, fallback: bool = False, rule: AnswerRule = "empty") -> str:
    """The answer after the answer sentence's 'answer is' (see find_answer), to the end of its
    line, less one final period.

    Without such a sentence the answer is what RULE says (see AnswerRule; by default "", which
    the authors count wrong), or with FALLBACK the last sentence of the text (for systems whose
    prompts never ask for the pattern).
    """
    match = find_answer(text)
    if match:
        answer = match.group(1).strip()
        return answer[:-1].rstrip() if answer.endswith(".") else answer
    if rule == "whole":
        return whole_output(text)
    if not fallback:
        return ""
    lines = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
    return lines[-1].rstrip(".") if lines else ""


def whole_output(text: str) -> str:
    """TEXT as IRCoT's answer extractor takes it when no answer sentence matches: its first
    line, less enclosing double quotes and one final period."""
    line = text.strip().split("\n", 1)[0].strip()
    if len(line) > 1 and line.startswith('"') and line.endswith('"'):
        line = line[1:-1]
    return line[:-1] if line.endswith(".") else line


def normalize(text: str) -> str:
    """Standard SQuAD normalisation: lower case, no punctuation, articles or extra spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())
