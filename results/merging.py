"""One table from the rows of several run folders, and the recall@k plot's axes, shared by the
report scripts of results/."""

import json
from pathlib import Path
from typing import Any

from activerag.evaluation.evaluate import Run, summarise_methods
from activerag.evaluation.tables import markdown_table

RUNS, OUT = Path("runs"), Path("results")


def merged_table(out: str, title: str, parts: dict[str, list[str] | dict[str, str] | None],
                 order: list[str], only_done: str | None = None,
                 columns: tuple[str, ...] | None = None, common: bool = False) -> dict | None:
    """One table from the rows of several runs (run folder: its methods to take, a dict: those
    methods under new labels, None: all), on the questions every run finished (ONLY_DONE:
    those the run of that method finished; COMMON: those every method of ORDER finished, for
    runs stopped early), with paired p-values against the first method."""
    if not all((RUNS / name / "examples.jsonl").exists() for name in parts):
        print(f"skipped {out}: a run is missing")
        return None
    rows = in_question_order([{**r, "method": keep[r["method"]]} if isinstance(keep, dict) else r
                              for name, keep in parts.items() for r in Run(RUNS / name).rows()
                              if keep is None or r["method"] in keep], list(parts))
    if only_done:
        ids = {r["id"] for r in rows if r["method"] == only_done}
        rows = [r for r in rows if r["id"] in ids]
    if common:
        done = [{r["id"] for r in rows if r["method"] == m} for m in order]
        ids = set.intersection(*done) if done else set()
        rows = [r for r in rows if r["id"] in ids]
    order = [m for m in order if any(r["method"] == m for r in rows)]
    summary = summarise_methods(rows, order)
    n = max(s["n"] for s in summary.values())
    table = markdown_table(summary, columns) if columns else markdown_table(summary)
    (OUT / f"{out}.md").write_text(f"### {title} (n={n})\n\n" + table)
    (OUT / f"{out}.json").write_text(json.dumps(summary, indent=1))
    print((OUT / f"{out}.md").read_text())
    return summary


def in_question_order(rows: list[dict[str, Any]], runs: list[str]) -> list[dict[str, Any]]:
    """ROWS in the question order of the first of RUNS (its config's ids; a question it lacks
    after, by id), so that the bootstrap's intervals do not depend on the order in which
    concurrent questions finished."""
    config = RUNS / runs[0] / "config.json"
    ids = json.loads(config.read_text()).get("ids", []) if config.exists() else []
    rank = {qid: i for i, qid in enumerate(ids)}
    return sorted(rows, key=lambda r: (rank.get(r["id"], len(rank)), r["id"]))


def save_recall_plot(fig: Any, ax: Any, ks: list[int], title: str, path: Path) -> None:
    """Label a gold-title recall@k plot (k on a log axis) and save it to PATH."""
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k passages retrieved")
    ax.set_ylabel("gold-title recall@k")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
