"""Issue #37's table 3, its second part: ETC, DRAGIN-lite and SeaKR-lite with the 1.5B reader on
llama.cpp, on HotpotQA beside none, single and FLARE re-run with them (results/run_all.sh: one
run folder a method; their first runs' folders, in the table's first part, are gone), on the
questions all six runs finished. Their papers measure them against FLARE: each is paired with
FLARE as well as with single. The default model ran these three on 2Wiki only
(results/2wiki-after-flare-n100.md), so there is no 0.5B column.

Run from the repository root:

    python results/t3_15b.py   # results/hotpotqa-t3-n100-15b.{md,json,png}, -scores.json
"""

import json

from after_flare import plot
from after_flare_rows import scores
from merging import OUT, RUNS, merged_table
from tables_15b import differences

from activerag.evaluation.evaluate import Run

NAME = "hotpotqa-t3-n100-15b"
METHODS = ["none", "single", "flare", "flare_etc", "dragin_lite", "flare_seakr"]
PARTS: dict[str, list[str] | dict[str, str] | None] = {
    f"hotpotqa-t3-15b-{m}": [m] for m in METHODS}


def t3_table() -> bool:
    """Write the table, its per-question scores and its plot; False when a run is missing or no
    question is finished by all six."""
    missing = [name for name in PARTS if not (RUNS / name / "examples.jsonl").exists()]
    if missing:
        print(f"skipped {NAME}: no rows yet in runs/{', runs/'.join(missing)}")
        return False
    rows = [r for name in PARTS for r in Run(RUNS / name).rows()]
    done = set.intersection(*({r["id"] for r in rows if r["method"] == m} for m in METHODS))
    if not done:
        print(f"skipped {NAME}: no question is finished by all six runs yet")
        return False
    large = merged_table(NAME, "HotpotQA: ETC, DRAGIN-lite and SeaKR-lite beside none, single "
                         "and FLARE, the 1.5B reader on llama.cpp; p: paired bootstrap against "
                         "none",
                         PARTS, METHODS, common=True)
    assert large is not None
    rows = [r for r in rows if r["id"] in done]
    (OUT / f"{NAME}-scores.json").write_text(json.dumps(scores(rows)))
    table = OUT / f"{NAME}.md"
    n = len(done)
    lines = differences(rows, METHODS)
    partial = ("" if n >= 100 else
               f"**Partial: the {n} of the 100 questions all six runs finished so far; the same "
               "commands (results/run_all.sh) resume them.**\n\n")
    table.write_text(partial + table.read_text() + "\n" + "\n".join(lines) + "\n")
    plot(large, {}, OUT / f"{NAME}.png", f"HotpotQA, n={n}", "Qwen2.5-Coder-1.5B on llama.cpp")
    print(partial + "\n".join(lines))  # (merged_table printed the table itself)
    return True


if __name__ == "__main__":
    t3_table()
