"""FLARE's θ on the default model as the paper's Figure 5: EM (and F1) against the share of
sentences that retrieved, from the committed side-by-side results (issue #21's θ runs on the
first 100 questions of the 2Wiki main table: results/2wiki-after-flare-n100.json for θ = 0.8,
-sweeps.json for the other θ). Writes results/2wiki-theta-n100.md and .png.

Run from the repository root after results/after_flare.py: `python results/figure5.py`.
"""

import json
from pathlib import Path

from activerag.evaluation.sweeps import plot, table

OUT = Path("results")
SIDE_BY_SIDE = "2wiki-after-flare-n100"


def theta_rows() -> list[tuple[str, float, dict]]:
    """(label, θ, summary) for each θ run, θ ascending: 0.8 is the table's flare row."""
    flare = json.loads((OUT / f"{SIDE_BY_SIDE}.json").read_text())["flare"]
    swept = json.loads((OUT / f"{SIDE_BY_SIDE}-sweeps.json").read_text())
    rows = [(f"theta={0.8}", 0.8, flare)] + [
        (f"theta={float(label.split('=')[1])}", float(label.split("=")[1]), s)
        for label, s in swept.items() if label.startswith("flare θ=")]
    return sorted(rows, key=lambda r: r[1])


if __name__ == "__main__":
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
