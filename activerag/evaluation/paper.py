"""The FLARE paper's few-shot exemplars, read from the shared data at run time (never copied)."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Literal

from activerag.errors import ActiveRagError
from activerag.nodes.prompts import (
    ANSWER_INSTRUCTION,
    ASQA_INSTRUCTION,
    SELF_ASK_INSTRUCTION,
    STRATEGYQA_INSTRUCTION,
    STRATEGYQA_QUESTION_LINE,
    Exemplar,
    Task,
)

EXEMPLARS_FILE = "prompts_flare/flare_exemplars.json"


def shared_data() -> Path:
    """The evaluation data folder: $ACTIVERAG_DATA, else ../shared/data beside the checkout."""
    if os.environ.get("ACTIVERAG_DATA"):
        path = Path(os.environ["ACTIVERAG_DATA"])
        if not path.is_dir():
            raise ActiveRagError(f"ACTIVERAG_DATA={path} is not a folder; point it at shared/data")
        return path
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        candidate = base.parent / "shared" / "data"
        if candidate.exists():
            return candidate
    raise ActiveRagError("evaluation data not found; set ACTIVERAG_DATA to the shared/data folder")


@cache
def paper_task(kind: Literal["cot", "self_ask", "strategyqa", "asqa"]) -> Task:
    """The paper's exemplars as a task: 2WikiMultihopQA chain of thought (Prompt 5) or self-ask
    (Prompt 3), StrategyQA (Prompt 6, the authors' yes/no template) or ASQA (Prompt 7, without
    the hint)."""
    path = shared_data() / EXEMPLARS_FILE
    if not path.exists():
        raise ActiveRagError(f"{path} is missing; set ACTIVERAG_DATA or use prompt_set='default'")
    data = json.loads(path.read_text())
    if kind == "cot":
        return Task(ANSWER_INSTRUCTION, tuple(
            Exemplar(e["question"], f"{e['cot']} So the answer is {e['answer']}.")
            for e in data["WikiMultiHopQA.cot_examplars"]))
    if kind == "self_ask":
        return Task(SELF_ASK_INSTRUCTION, tuple(
            Exemplar(e["question"], f"{e['cot']}\nSo the final answer is: {e['answer']}.")
            for e in data["WikiMultiHopQA.sa_examplars"]))
    if kind == "strategyqa":
        return Task(STRATEGYQA_INSTRUCTION, tuple(
            Exemplar(e["question"],
                     "".join(e["cot"]).strip() + f" So the final answer is {e['answer']}.")
            for e in data["StrategyQA.cot_examplars"]), STRATEGYQA_QUESTION_LINE)
    lead = "we need to consider "
    return Task(ASQA_INSTRUCTION, tuple(
        Exemplar(e["question"],
                 f"We need to consider {e['subq_cot'].removeprefix(lead)} {e['answer']}")
        for e in data["ASQA.general_hint_in_input_examplars"]))
