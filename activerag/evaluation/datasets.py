"""Evaluation sets, read from ../shared/data (or $ACTIVERAG_DATA) and never copied."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from activerag.demo import load_demo_questions
from activerag.errors import ActiveRagError
from activerag.settings import shared_data

Kind = Literal["short", "yesno", "long", "longbench"]
"""longbench: a long-context row, its whole (first-line) answer scored by LongBench's qa_f1."""


@dataclass
class Example:
    """One question with what scoring needs."""

    id: str
    question: str
    answers: list[str]
    gold_titles: list[str] = field(default_factory=list)
    kind: Kind = "short"
    short_answers: list[list[str]] = field(default_factory=list)
    """ASQA: the short answers of each disambiguated question."""
    group: str = ""
    """A subset to summarise apart ("one-hop", "two-hop", a 2Wiki question type); "": none."""
    context: str = ""
    """The question's own long context (LongBench rows); "": the question goes to a store."""
    gold_spans: list[tuple[int, int]] = field(default_factory=list)
    """Word spans of the gold paragraphs in `context` ([start, end))."""


def shared_json(rel: str) -> Any:
    """The JSON file REL of the shared data, or an error that says how to point at it."""
    path = shared_data() / rel
    if not path.exists():
        raise ActiveRagError(f"{path} is missing; set ACTIVERAG_DATA to the shared/data folder")
    return json.loads(path.read_text())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a jsonl file (blank lines skipped; a bad line named by its number)."""
    if not path.exists():
        raise ActiveRagError(f"{path} does not exist")
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ActiveRagError(f"{path}:{n} is not JSON ({exc.msg})") from exc
            except RecursionError as exc:
                raise ActiveRagError(f"{path}:{n} is nested deeper than the JSON reader "
                                     "follows; fix or remove that row") from exc
    return rows


def items(value: object, field: str, where: str) -> list[str]:
    """A row's list field as strings: a single string (or number) is one item, never its
    letters; None is none."""
    if value is None:
        return []
    if isinstance(value, str | int | float):
        return [str(value)]
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    raise ActiveRagError(f"{where}: '{field}' must be a string or a list of strings, got a "
                         f"{type(value).__name__}; fix the row")


TWOWIKI_1000 = "2wikimultihopqa/gfmrag_style_2wikimultihopqa_test1000_TTS-project.json"
TWOWIKI_500 = "2wikimultihopqa/tts_2wiki_dev_sampled500_columns.json"
HOTPOT_SPLIT = "hotpotqa/rpt_hotpotqa_officialdev_split_{split}.jsonl"


def twowiki() -> list[Example]:
    """2WikiMultihopQA dev, 1,000 questions with answer aliases and gold supporting titles."""
    raw = shared_json(TWOWIKI_1000)
    return [Example(r["id"], r["question"],
                    [*items(r["answer"], "answer", r["id"]),
                     *items(r.get("answer_aliases"), "answer_aliases", r["id"])],
                    items(r.get("supporting_facts"), "supporting_facts", r["id"])) for r in raw]


def _twowiki1000_aliases() -> dict[str, list[str]]:
    """The answer aliases of the 1,000-question file by 2Wiki id."""
    return {r["id"]: list(r.get("answer_aliases", [])) for r in shared_json(TWOWIKI_1000)}


def twowiki500() -> list[Example]:
    """2WikiMultihopQA dev, 500 questions with their 10 context paragraphs (pandas columns),
    grouped by question type.

    The file has one gold string per question; a question that is also in the 1,000-question
    file (same 2Wiki id, column `_1`) is scored against that file's aliases too. Only 36 of the
    500 are, and 18 of those gain an answer that way (twowiki500_alias_counts); the others keep
    their single gold string.
    """
    cols = shared_json(TWOWIKI_500)
    assert isinstance(cols, dict)
    aliases = _twowiki1000_aliases()
    out = []
    for key in cols["question"]:
        qid, answer = str(cols["_1"][key]), cols["answer"][key]
        titles = sorted({t for t, _ in cols["supporting_facts"][key]})
        answers = list(dict.fromkeys([answer, *aliases.get(qid, [])]))
        out.append(Example(qid, cols["question"][key], answers, titles,
                           group=str(cols["type"][key])))
    return out


def twowiki500_alias_counts() -> dict[str, int]:
    """How far the 1,000-question file's aliases reach into 2wiki500: `questions`, those
    `in_test1000` (same id), those `with_aliases` (a non-empty alias list there) and those
    `with_extra_answers` (an alias other than the gold string); the rest score on one string.
    """
    aliases = _twowiki1000_aliases()
    examples = twowiki500()
    return {"questions": len(examples),
            "in_test1000": sum(1 for e in examples if e.id in aliases),
            "with_aliases": sum(1 for e in examples if aliases.get(e.id)),
            "with_extra_answers": sum(1 for e in examples if len(e.answers) > 1)}


def hotpotqa(split: str = "dev") -> list[Example]:
    """HotpotQA official dev (rpt splits: train 300, dev 300, test 500), gold titles."""
    rows = read_jsonl(shared_data() / HOTPOT_SPLIT.format(split=split))
    return [Example(str(r["id"]), str(r["question"]), [str(r["answer"])],
                    sorted(set(r["supporting_facts"]["title"]))) for r in rows]


def strategyqa() -> list[Example]:
    """StrategyQA dev: 229 yes/no questions."""
    raw = shared_json("strategyqa/strategyqa_dev_eladsegal.json")
    return [Example(r["qid"], r["question"], ["yes" if r["answer"] else "no"], kind="yesno")
            for r in raw]


def asqa() -> list[Example]:
    """ASQA dev: 948 ambiguous questions, short answers per interpretation, long answers."""
    raw = shared_json("asqa/asqa_dev_agentic-disambiguation.json")
    return [Example(str(r["id"]), r["question"],
                    [a["long_answer"] for a in r.get("annotations", []) if a.get("long_answer")],
                    kind="long", short_answers=[p["short_answers"] for p in r["qa_pairs"]])
            for r in raw]


def nq() -> list[Example]:
    """NQ-open dev."""
    rows = read_jsonl(shared_data() / "nq/NQ-open.dev.jsonl")
    return [Example(f"nq-{i}", str(r["question"]), items(r["answer"], "answer", f"nq-{i}"))
            for i, r in enumerate(rows)]


DEMO_GROUPS = {1: "one-hop", 2: "two-hop"}
"""The demo questions' group by their `hops` field."""


def demo() -> list[Example]:
    """The shipped demo questions, grouped by hops (two-hop answers need two facts from
    different paragraphs)."""
    return [Example(q["id"], q["question"], q["answers"], q["gold_titles"],
                    group=_hops_group(q.get("hops")))
            for q in load_demo_questions()]


def _hops_group(hops: int | None) -> str:
    """The group of a demo question with HOPS hops; "" when the row does not say."""
    return "" if hops is None else DEMO_GROUPS.get(hops, f"{hops}-hop")


def user_jsonl(path: Path) -> list[Example]:
    """A user's jsonl: question, answers (or answer), optional id, gold_titles, kind, group,
    short_answers, context, gold_spans (each as Example says); or
    LongBench's rows (input, context, answers, _id; `activerag longctx build` adds gold_titles
    and gold_spans)."""
    out = []
    for n, r in enumerate(read_jsonl(path), 1):
        if "question" not in r and "input" in r:
            out.append(_longbench_row(r, f"{path}:{n}"))
            continue
        answers = r.get("answers", r.get("answer"))
        if not isinstance(r.get("question"), str) or answers is None:
            raise ActiveRagError(f"{path}:{n} needs a 'question' string and 'answers'")
        where = f"{path}:{n}"
        out.append(Example(str(r.get("id", f"row-{n}")), str(r["question"]),
                           items(answers, "answers", where),
                           items(r.get("gold_titles"), "gold_titles", where),
                           _kind(r.get("kind", "short"), where),
                           short_answers=_short_answers(r.get("short_answers"), where),
                           group=_text(r.get("group", ""), "group", where),
                           context=_text(r.get("context", ""), "context", where),
                           gold_spans=_spans(r.get("gold_spans"), where)))
    return out


def _kind(value: object, where: str) -> Kind:
    if value not in get_args(Kind):
        raise ActiveRagError(f"{where}: 'kind' must be one of {', '.join(get_args(Kind))}, got "
                             f"{value!r}; fix the row")
    return value  # type: ignore[return-value]


def _text(value: object, field: str, where: str) -> str:
    if not isinstance(value, str):
        raise ActiveRagError(f"{where}: '{field}' must be a string, got a "
                             f"{type(value).__name__}; fix the row")
    return value


def _short_answers(value: object, where: str) -> list[list[str]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(g, list) for g in value):
        raise ActiveRagError(f"{where}: 'short_answers' must be a list of lists of strings (the "
                             "short answers of each interpretation); fix the row")
    return [[str(a) for a in group] for group in value]


def _spans(value: object, where: str) -> list[tuple[int, int]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(s, list | tuple) and len(s) == 2 and all(isinstance(x, int) for x in s)
            for s in value):
        raise ActiveRagError(f"{where}: 'gold_spans' must be a list of [start, end] word pairs; "
                             "fix the row")
    return [(int(a), int(b)) for a, b in value]


def _longbench_row(r: dict[str, Any], where: str) -> Example:
    if not isinstance(r.get("context"), str) or not r["context"].strip():
        raise ActiveRagError(f"{where} is a LongBench row (it has 'input') without a 'context'; "
                             "long-context rows need their context (rebuild it with "
                             "`activerag longctx build`)")
    answers = r.get("answers", r.get("answer"))
    if answers is None:
        raise ActiveRagError(f"{where} has no 'answers'")
    return Example(str(r.get("_id", where)), str(r["input"]), items(answers, "answers", where),
                   items(r.get("gold_titles"), "gold_titles", where), kind="longbench",
                   context=r["context"],
                   gold_spans=_spans(r.get("gold_spans"), where))


DATASETS: dict[str, Callable[[], list[Example]]] = {
    "demo": demo, "2wiki": twowiki, "2wiki500": twowiki500, "hotpotqa": hotpotqa,
    "strategyqa": strategyqa, "asqa": asqa, "nq": nq,
}


def load_dataset(name: str, n: int | None = None) -> list[Example]:
    """The first N examples (None: all) of a named dataset, or of a jsonl file given by path;
    ids must be unique, since a run checkpoints and scores each example by its id."""
    if n is not None and n < 1:
        raise ActiveRagError(f"n must be at least 1, got {n}; ask for a number of examples, or "
                             "none for all of them")
    if name in DATASETS:
        rows = DATASETS[name]()
    elif name.endswith(".jsonl"):
        rows = user_jsonl(Path(name))
    else:
        raise ActiveRagError(f"unknown dataset {name!r}; use one of {', '.join(DATASETS)} "
                             "or a path to a .jsonl file")
    repeated = [i for i, count in Counter(e.id for e in rows).items() if count > 1]
    if repeated:
        raise ActiveRagError(f"{name} gives {len(repeated)} ids to more than one row ("
                             + ", ".join(map(repr, repeated[:5]))
                             + (", ..." if len(repeated) > 5 else "")
                             + "); give each example its own id")
    return rows if n is None else rows[:n]
