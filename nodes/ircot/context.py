"""IRCoT's settings (Trivedi et al. 2023): FLARE's (the LM, the store, the prompts, the shared
caps) and the loop's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from activerag.context import FlareContext
from activerag.context_checks import at_least, documented, refuse
from activerag.errors import SettingError


@documented
@dataclass(kw_only=True)
class IRCoTContext(FlareContext):
    """Settings of one IRCoT run (Trivedi et al. 2023, §3): K paragraphs retrieved with the
    question, then with each chain-of-thought sentence, all of them collected (up to a cap)
    until a sentence says "answer is" or the step cap; then a reader answers over them. The
    FLARE fields give the LM, the store, the prompts and the shared caps, and k is K, the
    paragraphs each retrieval finds (the paper tunes K over {2, 4, 6, 8}; the authors'
    released configurations use 6; FLARE's default, 2, is kept so that both compare at one k);
    theta, beta and FLARE's query and window fields are not read."""

    ircot_max_paragraphs: int = 15
    """The most paragraphs collected, all of them in every prompt; a retrieval adds none past
    this (the authors' code: 15)."""
    ircot_max_steps: int = 10
    """Stop after this many CoT sentences even without "answer is" (the authors' code: 10)."""
    ircot_reader: Literal["cot", "none"] = "cot"
    """cot: a reader writes the whole chain of thought again over every collected paragraph,
    and its answer is the answer (the paper's IRCoT QA, §3.2); none: the loop's own chain is
    the answer."""
    ircot_query: Literal["sentence", "code"] = "sentence"
    """sentence: the last CoT sentence is the next query (§3.1); code: as the authors' code
    does, the last sentence that states a fact (not "So ...", "Thus ...", nor arithmetic), the
    question while there is none, each query without its wh-words."""
    ircot_exemplars: Literal["2wikimultihopqa", "hotpotqa", "musique", "iirc"] = (
        "2wikimultihopqa")
    """prompt_set "paper": whose exemplars, read from $ACTIVERAG_DATA/prompts_ircot at run
    time."""
    ircot_distractors: int = 2
    """prompt_set "paper": M, the distractor paragraphs beside each exemplar's gold ones (1, 2
    or 3; the authors' configurations: 2)."""
    ircot_shots: int = 15
    """The most exemplars in a prompt (the authors' runs: 15); while a prompt does not fit the
    model's window the first of them is dropped, one at a time, as the authors' code does."""

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 1, "ircot_max_paragraphs", "ircot_max_steps")
        at_least(self, 0, "ircot_shots")
        if self.ircot_distractors not in (1, 2, 3):
            raise refuse("ircot_distractors", "be 1, 2 or 3 (the paper's exemplar files)",
                         self.ircot_distractors)
        if self.prompt_set not in ("default", "paper", "none"):
            raise SettingError(
                f"IRCoT has the paper's exemplars for 2WikiMultihopQA, HotpotQA, MuSiQue and "
                f"IIRC (prompt_set 'paper' with ircot_exemplars), none for prompt_set "
                f"{self.prompt_set!r}; use prompt_set 'paper' or 'default'")
