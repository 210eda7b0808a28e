"""Issue #37's 1.5B tables built from one run folder a method (table 3's second part, tables 4
and 6: results/t3_15b.py, results/judged_15b.py), on the questions every run of a table finished,
and the published claims judged on them beside the default model's numbers."""

import json
from collections.abc import Callable
from typing import Any

from merging import OUT, RUNS, in_question_order, merged_table
from tables_15b import side_by_side, small_rows

from activerag.evaluation.summaries import summarise_methods

Extra = Callable[[list[dict[str, Any]], dict[str, Any]], list[str]]
"""The lines written after a table, given its rows and its summary."""


def one_run_a_method(name: str, folder: str, methods: list[str], total: int, title: str,
                     plot_title: str, extra: Extra, elsewhere: dict[str, str] | None = None
                     ) -> list[dict[str, Any]] | None:
    """results/NAME.{md,json,png} and -scores.json from one run folder a method
    (runs/FOLDER-<method>, or runs/ELSEWHERE[method] for a method another table ran), on the
    questions every one of them finished (marked partial below TOTAL questions), p against the
    first method, with EXTRA's lines (given those questions' rows and the table's summary)
    after the table; the rows, or None when a run is missing or no question is shared."""
    from after_flare import plot
    from after_flare_rows import scores

    from activerag.evaluation.evaluate import Run

    parts: dict[str, list[str] | dict[str, str] | None] = {
        (elsewhere or {}).get(m, f"{folder}-{m}"): [m] for m in methods}
    missing = [run for run in parts if not (RUNS / run / "examples.jsonl").exists()]
    if missing:
        print(f"skipped {name}: no rows yet in runs/{', runs/'.join(missing)}")
        return None
    rows = in_question_order([r for run in parts for r in Run(RUNS / run).rows()], list(parts))
    done = set.intersection(*({r["id"] for r in rows if r["method"] == m} for m in methods))
    if not done:
        print(f"skipped {name}: no question is finished by every run yet")
        return None
    summary = merged_table(name, title, parts, methods, common=True)
    assert summary is not None
    rows = [r for r in rows if r["id"] in done]
    (OUT / f"{name}-scores.json").write_text(json.dumps(scores(rows)))
    n = len(done)
    partial = ("" if n >= total else
               f"**Partial: the {n} of the {total} questions every run finished so far; the "
               "same commands (results/run_all.sh) resume them.**\n\n")
    lines = extra(rows, summary)
    table = OUT / f"{name}.md"
    table.write_text(partial + table.read_text() + "\n" + "\n".join(lines) + "\n")
    plot(summary, {}, OUT / f"{name}.png", f"{plot_title}, n={n}",
         "Qwen2.5-Coder-1.5B on llama.cpp")
    print(partial + "\n".join(lines))  # (merged_table printed the table itself)
    return rows


def judged_beside(claims: list[Any], small_scores: str, methods: list[str], title: str,
                  shared: str = "", note: str = "") -> Extra:
    """one_run_a_method's EXTRA: the published CLAIMS judged on the 1.5B's rows, then its F1 and
    EM beside the default model's on the same questions (its committed per-question scores,
    results/SMALL_SCORES), each with its p against the first method. SHARED: an example of a
    request two of the table's methods share, for the note on seconds ("" for none). NOTE: what
    to know of the default model's numbers, after them ("" for nothing)."""
    from after_flare import MARGIN, claims_table

    def extra(rows: list[dict[str, Any]], large: dict[str, Any]) -> list[str]:
        done = {r["id"] for r in rows}
        small = summarise_methods([r for r in small_rows(small_scores)
                                   if r["id"] in done and r["method"] in methods], methods)
        pairs = [(f"both: the 1.5B's {len(done)}", m, small, large) for m in methods]
        return (["#### The published claims (the 1.5B)", "", claims_table(rows, None, claims),
                 f"'≈' needs the 95% interval of the paired F1 difference inside ±{MARGIN} "
                 "(fixed before the runs). Seconds per question do not compare the rows: the "
                 "runs share an LM cache, so a request one method made first is a cache hit "
                 f"for the next{f' ({shared})' if shared else ''}; LM calls and tokens count "
                 "every request, cached or not.", ""]
                + side_by_side(f"{title}, F1 (0.5B: its committed per-question scores, "
                               f"{small_scores}, on the same questions; p against "
                               f"{methods[0]})", pairs, "f1")
                + side_by_side("... and EM", pairs, "em") + ([note, ""] if note else []))

    return extra
