"""Every graph drawn the same before and after a restructuring (issue #39): each registry
method's `get_graph().to_json()`, plain and xray, at an earlier commit and in today's tree,
compared byte for byte. Needs no server (the graphs are compiled, not run).

    python -m benchmarks.robustness.graphs_unchanged --before REV

The earlier commit is checked out in a temporary worktree laid out as installed
(benchmarks/robustness/unchanged.py's), each tree dumps its graphs in a fresh interpreter;
prints how many
graphs both trees have and every one that differs, and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.robustness.unchanged import ROOT, worktree

DUMP = """
import json, sys
from activerag.graphs.registry import METHODS
out = {}
for name, row in METHODS.items():
    graph = row.graph
    out[name] = [json.dumps(graph.get_graph(xray=x).to_json(), sort_keys=True, default=str)
                 for x in (False, True)]
json.dump(out, sys.stdout)
"""


def graphs(tree: Path) -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", DUMP], cwd=tree, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(tree), "PATH": ""})
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the earlier commit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphs-before-") as tmp:
        where = worktree(args.before, Path(tmp) / "tree")
        try:
            before = graphs(where)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
                           capture_output=True)
    after = graphs(ROOT)
    both = sorted(set(before) & set(after))
    differ = [name for name in both if before[name] != after[name]]
    print(f"{len(both)} graphs in both trees (only before: {sorted(set(before) - set(after))}; "
          f"only after: {sorted(set(after) - set(before))}); plain and xray to_json differ "
          f"for {len(differ)}: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
