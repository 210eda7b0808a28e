"""Issue #37's table 4: REPLUG on 2Wiki with the 1.5B reader on llama.cpp, its Table 3 shape
(no retrieval, the top document, the 10 documents concatenated, the released code's answer
vote and the token-level ensemble, agree mode), one run folder a method, on the questions all
five finished; each published claim judged as on the default model's table
(results/2wiki-replug-n100.md), and the 0.5B's numbers beside the 1.5B's on the same questions.

Run from the repository root:

    python results/t4_15b.py   # results/2wiki-replug-n100-15b.{md,json,png}, -scores.json
"""

from typing import Any

from after_flare import claims_table
from after_flare_tables import REPLUG_CLAIMS
from tables_15b import one_run_a_method, side_by_side, small_rows

from activerag.evaluation.summaries import summarise_methods

NAME = "2wiki-replug-n100-15b"
METHODS = ["none", "single_k1", "single_k10", "replug_vote", "replug"]


def extra(rows: list[dict[str, Any]]) -> list[str]:
    """The published claims on ROWS, then F1 and EM beside the default model's on the same
    questions (its committed per-question scores), each with its p against none."""
    done = {r["id"] for r in rows}
    n = len(done)
    small = [r for r in small_rows("2wiki-replug-n100-scores.json")
             if r["id"] in done and r["method"] in METHODS]
    small_summary = summarise_methods(small, METHODS)
    large = summarise_methods(rows, METHODS)
    pairs = [(f"both: the 1.5B's {n}", m, small_summary, large) for m in METHODS]
    return (["#### The published claims (the 1.5B)", "", claims_table(rows, None, REPLUG_CLAIMS),
             "'≈' needs the 95% interval of the paired F1 difference inside ±0.05 (fixed "
             "before the runs).", ""]
            + side_by_side("REPLUG on 2Wiki, F1 (0.5B: results/2wiki-replug-n100.md, on the "
                           "same questions; p against none)", pairs, "f1")
            + side_by_side("... and EM", pairs, "em"))


if __name__ == "__main__":
    one_run_a_method(NAME, "2wiki-replug-15b", METHODS, 100,
                     "REPLUG on 2WikiMultihopQA (Table 3's shape), the 1.5B reader on llama.cpp: "
                     "the paper's exemplars without documents, BM25 k=10 over the 2Wiki corpus, "
                     "answers capped at 128 tokens; p: paired bootstrap against none",
                     "2WikiMultihopQA, REPLUG", extra)
