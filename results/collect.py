"""Copy the summaries of runs/ into results/ (tables, plots, summary JSON without examples)."""

import json
import shutil
from pathlib import Path

RUNS, OUT = Path("runs"), Path("results")
for name in ("2wiki-main-n100", "2wiki-family-n30"):
    summary = json.loads((RUNS / name / "summary.json").read_text())
    (OUT / f"{name}.json").write_text(json.dumps(summary, indent=1))
    shutil.copy(RUNS / name / "summary.md", OUT / f"{name}.md")
for folder, suffix in (("sweeps", "n30-50"), ("sweeps-n100", "n100")):
    for sweep in sorted((RUNS / folder).iterdir()):
        for ext in ("md", "png"):
            src = sweep / f"{sweep.name}.{ext}"
            if src.exists():
                shutil.copy(src, OUT / f"sweep-{sweep.name}-{suffix}.{ext}")
for ext in ("md", "json"):
    shutil.copy(RUNS / "flarechain" / f"compare.{ext}", OUT / f"flarechain.{ext}")
print(sorted(p.name for p in OUT.iterdir()))

# Every method on the same first 30 questions: the family run plus those rows of the main run.
from activerag.evaluate import Run, markdown_table, summarise  # noqa: E402

family = Run(RUNS / "2wiki-family-n30").rows()
ids = {r["id"] for r in family}
main_rows = [r for r in Run(RUNS / "2wiki-main-n100").rows() if r["id"] in ids]
rows = main_rows + family
order = ["none", "single", "previous_window", "previous_sentence", "next_sentence", "self_ask",
         "flare", "flare_explicit", "flare_combined", "flare_instruct"]
summary = {m: summarise([r for r in rows if r["method"] == m]) for m in order}
(OUT / "2wiki-all-methods-n30.md").write_text(
    "### Every method on the same 30 2WikiMultihopQA dev questions (paper exemplars, BM25 k=2, "
    "SmolLM2-135M-Instruct, at most 4 sentences / 128 tokens, 4 questions at a time)\n\n"
    + markdown_table(summary))
print((OUT / "2wiki-all-methods-n30.md").read_text())
