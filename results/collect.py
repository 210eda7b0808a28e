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
