"""FLARE's β on the default model as the paper's Table 5, with the two masking options beside
it: each variant of `activerag sweep beta` on the first 100 questions of the 2Wiki main table,
with p against β = 0 (querying with the whole draft), the paper's comparison. Writes
results/2wiki-table5-n100.md and .png (EM against β, one line per masking mode).

Run like results/after_flare.py, from the folder whose runs/ holds sweeps-table5/beta (or with
nothing there: the committed results/2wiki-beta-n100-scores.json and .json are read), with
results/ beside it: `python results/table5.py`.
"""

from after_flare_rows import OUT, load_rows, summaries
from after_flare_tables import BETA

from activerag.evaluation.sweeps import COLUMNS, plot
from activerag.evaluation.tables import markdown_table

FIRST = "beta=0.0"


def beta_of(label: str) -> float:
    """β of a variant label such as "beta=0.4 word+x"."""
    return float(label.split(" ")[0].split("=")[1])


if __name__ == "__main__":
    rows, methods, frozen = load_rows(BETA)
    # β=0.4 with per-token masking is FLARE's own setting: its flare row, unless run as such
    named = {"beta=0.4": "flare"} if "beta=0.4" not in methods else {}
    variants = sorted([m for m in methods if m.startswith("beta=")] + list(named),
                      key=lambda m: (m.partition(" ")[2], beta_of(m)))
    summary = summaries(rows, [named.get(m, m) for m in variants], FIRST, frozen)
    summary = {m: summary[named.get(m, m)] for m in variants}
    n = max(s["n"] for s in summary.values())
    columns = ("em", "f1", "gold_title_recall", *COLUMNS[2:])
    text = (
        f"### Table 5 on the default model: FLARE's β, 2WikiMultihopQA, n={n}\n\n"
        "Each variant a full FLARE run (θ=0.8, BM25 k=2, the paper's exemplars with their "
        "documents, answers capped at 128 tokens) on the first 100 questions of the main "
        "table; p (paired sign-flip test, EM / F1) against β = 0, the whole draft as the query, as "
        "Table 5 compares; β = 0.4 with per-token masking is FLARE's own setting, its row in "
        "2wiki-after-flare-n100. 'word': whole words with a token below β masked; 'word+x': "
        "the same, never masking a word of the question. The paper (text-davinci-003): EM "
        "0.488, 0.498, 0.510, 0.506 at β = 0, 0.2, 0.4, 0.6. Every variant against flare and "
        "none, the claims' verdicts and the intervals of the differences: "
        "2wiki-beta-n100.md.\n\n"
        + markdown_table(summary, columns, "variant")
        + "\nPlot: 2wiki-table5-n100.png (EM against β, one line per masking mode, 95% "
        "intervals).\n")
    (OUT / "2wiki-table5-n100.md").write_text(text)
    result = {"dataset": "2wiki", "n": n}
    plot("beta", [(m, beta_of(m), summary[m]) for m in variants], OUT / "2wiki-table5-n100.png",
         result)
    print(text)
