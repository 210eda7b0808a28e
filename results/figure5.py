"""FLARE's θ as the paper's Figure 5: EM (and F1) against the share of sentences that retrieved.

- default model: from the committed side-by-side results (issue #21's θ runs on the first 100
  questions of the 2Wiki main table: results/2wiki-after-flare-n100.json for θ = 0.8,
  -sweeps.json for the other θ). Writes results/2wiki-theta-n100.md and .png.
- 15b: the 1.5B reader on llama.cpp (issue #37), from `activerag sweep theta`'s run folder
  (runs/sweeps-15b/theta) and table 6's no-retrieval run (runs/2wiki-family-15b-none), on the
  same 100 questions: each θ that finished them all, with p against θ = 0.8 and against no
  retrieval, Figure 5's claims judged, and the default model's numbers beside. Writes
  results/2wiki-theta-n100-15b.md, .json and .png.

Run from the repository root: `python results/figure5.py` (after results/after_flare.py) or
`python results/figure5.py 15b` (results/run_all.sh has the sweep's command).
"""

import json
import sys
from pathlib import Path
from typing import Any

from after_flare_rows import Claim
from merging import RUNS, in_question_order

from activerag.evaluation.summaries import summarise_methods
from activerag.evaluation.sweeps import plot, table
from activerag.evaluation.tables import p_text

OUT = Path("results")
SIDE_BY_SIDE = "2wiki-after-flare-n100"
SWEEP_15B, NONE_15B = "sweeps-15b/theta", "2wiki-family-15b-none"
THETAS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
"""`activerag sweep theta`'s grid; its labels are theta=<θ>."""
CLAIMS = [
    Claim("Retrieving while writing beats retrieving once with the question (Figure 5, 2Wiki: "
          "EM rises from 0% of sentences retrieving)", "theta=0.8", "theta=0.0"),
    Claim("Past 60% of sentences retrieving the score plateaus (Figure 5, 2Wiki)", "theta=1.0",
          "theta=0.8", equal=True),
    *[Claim(f"FLARE at θ = {t} beats answering without documents", f"theta={t}", "none")
      for t in THETAS],
]


def theta_rows() -> list[tuple[str, float, dict]]:
    """(label, θ, summary) for each θ run, θ ascending: 0.8 is the table's flare row."""
    flare = json.loads((OUT / f"{SIDE_BY_SIDE}.json").read_text())["flare"]
    swept = json.loads((OUT / f"{SIDE_BY_SIDE}-sweeps.json").read_text())
    rows = [(f"theta={0.8}", 0.8, flare)] + [
        (f"theta={float(label.split('=')[1])}", float(label.split("=")[1]), s)
        for label, s in swept.items() if label.startswith("flare θ=")]
    return sorted(rows, key=lambda r: r[1])


def default_model() -> None:
    rows = theta_rows()
    result = {"dataset": "2wiki", "n": min(s["n"] for _, _, s in rows),
              "context": {"model": "Qwen2.5-Coder-0.5B-Instruct", "k": 2, "retriever": "bm25",
                          "prompt_set": "paper"}}
    text = table("theta", rows, result) + (
        "\nFigure 5's shape on the default model: each θ a full FLARE run on the same 100 "
        "questions (β=0.4, answers capped at 128 tokens); p against θ = 0.8 and against none in "
        f"{SIDE_BY_SIDE}.md's sweep table. Plot: 2wiki-theta-n100.png.\n")
    (OUT / "2wiki-theta-n100.md").write_text(text)
    plot("theta", rows, OUT / "2wiki-theta-n100.png", result)
    print(text)


def large_rows() -> tuple[list[dict[str, Any]], list[str], dict[str, int]]:
    """The 1.5B's rows of every θ that finished the sweep's questions, and of no retrieval on
    them; those θ's labels, ascending; the rows so far of each θ still under way."""
    from activerag.evaluation.evaluate import Run

    for folder, what in ((SWEEP_15B, "the sweep"), (NONE_15B, "table 6's none")):
        if not (RUNS / folder / "examples.jsonl").exists():
            raise SystemExit(f"no rows in runs/{folder}: run {what} first, or copy its kept rows "
                             "back (results/runs-15b/README.md)")
    sweep = Run(RUNS / SWEEP_15B)
    ids = set(json.loads((RUNS / SWEEP_15B / "config.json").read_text())["ids"])
    rows = in_question_order([r for r in sweep.rows() + Run(RUNS / NONE_15B).rows()
                              if r["id"] in ids], [SWEEP_15B])
    count = {f"theta={t}": len({r["id"] for r in rows if r["method"] == f"theta={t}"})
             for t in THETAS}
    done = [label for label, n in count.items() if n == len(ids)]
    missing = len(ids - {r["id"] for r in rows if r["method"] == "none"})
    if missing:
        raise SystemExit(f"runs/{NONE_15B} lacks {missing} of the sweep's questions; run table "
                         "6's none first (results/run_all.sh)")
    under_way = {label: n for label, n in count.items() if 0 < n < len(ids)}
    return [r for r in rows if r["method"] in (*done, "none")], done, under_way


def small_summary(done: list[str], ids: set[str]) -> dict[str, Any]:
    """The default model's θ runs and none on IDS (its committed per-question scores), p
    against θ = 0.8."""
    from tables_15b import small_rows

    named = {"flare": "theta=0.8", "none": "none",
             **{f"flare θ={t:g}": f"theta={t}" for t in THETAS if t != 0.8}}
    rows = [{**r, "method": named[r["method"]]} for r in small_rows(f"{SIDE_BY_SIDE}-scores.json")
            if r["method"] in named and r["id"] in ids]
    return summarise_methods(rows, ["theta=0.8", *[m for m in done if m != "theta=0.8"], "none"])


def large_model() -> None:
    from after_flare import claims_table
    from tables_15b import side_by_side

    rows, done, under_way = large_rows()
    if "theta=0.8" not in done:
        raise SystemExit("θ = 0.8 has not finished the sweep's questions yet; resume the sweep "
                         "(results/run_all.sh)")
    ids = {r["id"] for r in rows}
    others = [m for m in done if m != "theta=0.8"]
    large = summarise_methods(rows, ["theta=0.8", *others, "none"])
    versus_none = summarise_methods(rows, ["none", *done])
    swept = [(label, float(label.split("=")[1]), large[label]) for label in done]
    result = {"dataset": "2wiki", "n": len(ids),
              "context": {"model": "Qwen2.5-Coder-1.5B-Instruct (llama.cpp)", "k": 2,
                          "retriever": "bm25", "prompt_set": "paper"}}
    pending = ("" if not under_way else "**Partial: θ = " + ", ".join(
        f"{label.split('=')[1]} ({n} of {len(ids)} questions)" for label, n in under_way.items())
        + " still under way; the same command resumes the sweep.**\n\n")
    small = small_summary(done, ids)
    pairs = [("both", m, small, large) for m in ("theta=0.8", *others, "none")]
    first = [row for row in swept if row[0] == "theta=0.8"]  # p's column names the first row
    text = (pending + table("theta", first + [r for r in swept if r not in first], result) + "\n"
            + "| θ | p against θ = 0.8 (em / f1) | p against none (em / f1) |\n|---|---|---|\n"
            + "".join(f"| {m} | {p(large[m])} | {p(versus_none[m])} |\n" for m in done)
            + "\n#### Figure 5's claims (the 1.5B)\n\n" + claims_table(rows, None, CLAIMS)
            + "\nEach θ a full FLARE run on the same questions (β=0.4, answers capped at 128 "
            "tokens, the LM cache shared with table 6, so seconds do not compare the rows); none "
            f"is table 6's run ({NONE_15B}). Plot: 2wiki-theta-n100-15b.png.\n\n"
            + "\n".join(side_by_side("F1 beside the default model's (its θ runs, "
                                     f"{SIDE_BY_SIDE}-scores.json, on the same questions; p "
                                     "against θ = 0.8)", pairs, "f1")))
    (OUT / "2wiki-theta-n100-15b.md").write_text(text)
    (OUT / "2wiki-theta-n100-15b.json").write_text(json.dumps(large, indent=1))
    plot("theta", swept, OUT / "2wiki-theta-n100-15b.png",  # its title names the reader
         {**result, "dataset": "2wiki, Qwen2.5-Coder-1.5B on llama.cpp"})
    print(text)


def p(summary: dict[str, Any]) -> str:
    """The paired p (EM / F1) against the first method of a summary, or - for that method."""
    vs = summary.get("vs_first")
    if not vs:
        return "-"
    return " / ".join(p_text(vs[f"{k}_p"]) for k in ("em", "f1"))


if __name__ == "__main__":
    which = sys.argv[1:] or ["default"]
    modes = {"default": default_model, "15b": large_model}
    if len(which) > 1 or which[0] not in modes:
        raise SystemExit(f"usage: python results/figure5.py [{'|'.join(modes)}]")
    modes[which[0]]()
