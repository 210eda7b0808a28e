"""The rows of results/after_flare.py's tables: each method's answer to a question from the
first run folder that holds it, each swept variant's from its own run folder, and, where a
folder was lost with its machine, the committed summaries and per-question scores
(results/<table>.json, -sweeps.json and -scores.json), so that a measured row is never
dropped."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from activerag.evaluation.evaluate import Run
from activerag.evaluation.summaries import summarise, versus

RUNS, OUT = Path("runs"), Path("results")


class Claim(NamedTuple):
    """A published claim judged on a table: METHOD against AGAINST by their paired F1."""

    text: str
    method: str
    against: str
    equal: bool = False
    """A claim that the two match: judged by its interval (within ±0.05 F1), not its p."""


@dataclass(frozen=True)
class Table:
    """One side-by-side table: its questions, where each method's rows come from, its title."""

    name: str
    questions: str
    """The run folder whose config holds the question ids."""
    sources: dict[str, list[str] | None]
    """Run folder -> its methods to take (None: all); each answer is taken from the first
    folder that holds it."""
    title: str
    sweeps: list[str] = field(default_factory=list)
    """Folders of one-variant run folders: each gate at the 10/25/75/90% quantiles of its
    estimator on the 40 calibration questions (results/gate_thresholds.json; the median is the
    gates run), FLARE at other θ than its 0.8."""
    claims: list[str] = field(default_factory=list)
    """Methods whose claims are judged here (empty: every claim)."""
    borrowed: dict[str, list[str]] = field(default_factory=dict)
    """Another table's name -> its methods to take from its committed results where no run
    folder of this table holds them (the same questions, run for that table)."""


ORDER = ["flare", "none", "single", "ircot", "adaptive_rag", "adaptive_rag_prompt",
         "gate_entropy_mean", "gate_entropy_max", "gate_perplexity", "gate_lexsim",
         "flare_etc", "dragin_lite", "flare_seakr", "previous_window", "previous_sentence",
         "next_sentence", "self_ask", "flare_explicit", "flare_combined", "flare_instruct"]
THRESHOLD = {"flare_etc": "etc_threshold", "dragin_lite": "dragin_threshold"}
"""The context field a swept method's threshold is in (the gates': gate_threshold)."""


def question_ids(table: Table) -> set[str]:
    return set(question_order(table))


def load_rows(table: Table) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """The rows of every source on the table's question ids, the methods present in order, and
    the committed summaries of the methods whose run folder is gone. A method's answer to a
    question is taken from the first source that holds it (the main run before its re-run; a
    method run in two folders side by side is taken from both), so no question is counted
    twice; a method no run folder holds is taken from the table's committed results (its
    per-question scores and its summary), so that losing a run folder with its machine does not
    drop a row that was measured."""
    ids = question_ids(table)
    rows: list[dict[str, Any]] = []
    for folder, keep in table.sources.items():
        if not (RUNS / folder / "examples.jsonl").exists():
            print(f"left out {folder}: no rows in runs/")
            continue
        taken = {(r["method"], r["id"]) for r in rows}
        rows += [r for r in Run(RUNS / folder).rows() if r["id"] in ids
                 and (keep is None or r["method"] in keep)
                 and (r["method"], r["id"]) not in taken]
    frozen, kept = committed(table, {r["method"] for r in rows})
    for other, methods in table.borrowed.items():
        more, more_rows = committed(Table(other, table.questions, {}, ""),
                                    {r["method"] for r in rows + kept}, only=set(methods))
        frozen, kept = {**frozen, **more}, kept + more_rows
    rows += [r for r in kept if r["id"] in ids]
    present = {r["method"] for r in rows}
    return (in_question_order(table, rows),
            [m for m in ORDER if m in present] + sorted(present - set(ORDER)), frozen)


def in_question_order(table: Table, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ROWS in the order of the table's questions (stable within a question), so that the
    bootstrap, which resamples positions with a fixed seed, gives the same intervals whatever
    order the questions of a run finished in (or came from the cache in)."""
    position = {i: k for k, i in enumerate(question_order(table))}
    return sorted(rows, key=lambda r: position[r["id"]])


def question_order(table: Table) -> list[str]:
    """The table's question ids in order: its questions folder's, else (that folder lost) those
    of the committed per-question scores, which were written in question order."""
    config = RUNS / table.questions / "config.json"
    if config.exists():
        return list(json.loads(config.read_text())["ids"])
    saved = json.loads((OUT / f"{table.name}-scores.json").read_text())["methods"]
    return list(next(iter(saved.values())))


def committed(table: Table, live: set[str], suffix: str = "", only: set[str] | None = None
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The methods (SUFFIX "-sweeps": the swept variants) of the committed table, results/
    <table><SUFFIX>.json and -scores.json, that no run folder holds now (not in LIVE; ONLY:
    of these alone): their committed summaries, and their per-question scores as rows (id,
    method, scored fields)."""
    summary_path = OUT / f"{table.name}{suffix}.json"
    scores_path = OUT / f"{table.name}-scores.json"
    if not (summary_path.exists() and scores_path.exists()):
        return {}, []
    rows_of = json.loads(summary_path.read_text())
    saved = json.loads(scores_path.read_text())
    found = {m: rows_of[m] for m in rows_of if m in saved["methods"] and m not in live
             and (only is None or m in only)}
    for m in found:
        print(f"{m}: its run folder is gone; taken from results/{table.name}{suffix}.json and "
              "-scores.json as committed")
    keys = saved["fields"]
    return found, [{"id": i, "method": m, **dict(zip(keys, values, strict=True))}
                   for m in found for i, values in saved["methods"][m].items()]


def summaries(rows: list[dict[str, Any]], methods: list[str], first: str,
              frozen: dict[str, Any]) -> dict[str, Any]:
    """Each method's summary, FIRST first, every other one against FIRST (paired); a frozen
    method's summary is its committed one, its comparison recomputed from its scores."""
    by_method = {m: [r for r in rows if r["method"] == m] for m in methods}
    out: dict[str, Any] = {}
    for m in [first] + [m for m in methods if m != first]:
        out[m] = dict(frozen[m]) if m in frozen else summarise(by_method[m])
        was = out[m].pop("vs_first", {})
        if m != first and by_method[m] and by_method[first]:
            # a frozen row's scores hold no precision or recall: their committed p stay
            out[m]["vs_first"] = {**(was if was.get("method") == first else {}),
                                  **versus(by_method[m], by_method[first], first)}
    return out


def swept_summaries(table: Table, rows: list[dict[str, Any]], frozen: dict[str, Any]
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Each swept variant's summary with its paired p against flare (of ROWS; FROZEN: the
    committed summaries of the table's methods), in the order of method then threshold, and
    the variants' rows in question order. A variant whose run folder is gone keeps its
    committed summary (results/<table>-sweeps.json), its p recomputed from its committed
    per-question scores, as a lost method's row does."""
    live = sweep_rows(table)
    gone, kept = committed(table, {r["method"] for r in live}, "-sweeps")
    ids = question_ids(table)
    every = in_question_order(table, live + [r for r in kept if r["id"] in ids])
    names = sorted({r["method"] for r in every},
                   key=lambda m: (m.split(" ")[0], float(m.split("=")[1])))
    out = summaries([r for r in rows if r["method"] == "flare"] + every, ["flare", *names],
                    "flare", {**frozen, **gone})
    out.pop("flare")
    return out, every


def sweep_rows(table: Table) -> list[dict[str, Any]]:
    """The threshold sweeps (runs/<sweep>/<variant>/, one method each), each row's method
    renamed "<method> t=<threshold>" or "flare θ=<theta>"; the ids kept are the table's."""
    ids = question_ids(table)
    rows: list[dict[str, Any]] = []
    for folder in [f for sweep in table.sweeps
                   for f in sorted((RUNS / sweep).glob("*/examples.jsonl"))]:
        config = json.loads((folder.parent / "config.json").read_text())
        (method, ctx), = config["contexts"].items()
        label = (f"{method} θ={ctx['theta']:g}" if method == "flare"
                 else f"{method} t={ctx[THRESHOLD.get(method, 'gate_threshold')]:g}")
        rows += [{**r, "method": label} for r in Run(folder.parent).rows() if r["id"] in ids]
    return in_question_order(table, rows)


SCORED = ("em", "f1", "gold_title_recall", "lm_calls", "retrieval_steps")
"""The per-question fields a -scores.json keeps by default."""


def scores(rows: list[dict[str, Any]], keys: tuple[str, ...] = SCORED) -> dict[str, Any]:
    """Each method's per-question scores, keyed by question id (no question text), so that
    paired differences can be recomputed from results/ alone if the run folders are lost."""
    out: dict[str, Any] = {"fields": list(keys), "methods": {}}
    for r in rows:
        out["methods"].setdefault(r["method"], {})[r["id"]] = [r.get(k) for k in keys]
    return out
