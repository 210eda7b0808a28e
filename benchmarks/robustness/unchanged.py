"""Behaviour unchanged by a restructuring (issue #39): every method run on the same questions at
an earlier commit and at today's tree, sharing one LM cache, must make no new LM request on
the second run, and give the same rows but for wall time.

    python -m benchmarks.robustness.unchanged --before REV --base-url URL [--store DIR] [--n 10]
                                   [--methods a,b] [--leave-out c,d] [--concurrency 2]
                                   [--long FILE] [--long-n 3] [--after REV] [--router DIR]
                                   [--out FILE]

The earlier commit is checked out in a temporary worktree and run with its own code (so is
--after's, else today's tree runs, which must then stay as it is until the run ends); both runs
use `activerag eval --dataset demo --cache` with ACTIVERAG_HOME in a temporary folder, so the
cache holds exactly what the first run asked. The methods are those both trees have (default:
all). A method whose requests differ shows as new cache entries, one whose rows differ by its
fields. Any model serves: the check compares the code, not the answers' quality (a small
model on llama.cpp is quickest; FB-RAG's two LMs are that server too). With --long (a file
`activerag longctx build` wrote), the FB-RAG family also runs on its first --long-n long
contexts, in a run of its own beside the demo's. Prints the result and writes it to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TIMED = ("seconds", "stage_seconds")
"""The row fields that measure wall time: left out of the comparison."""
LONG = ("fb_rag", "fb_rag_fb", "op_rag", "vanilla_rag", "long_context", "self_route")
"""The methods that read a question's own long context (FB-RAG and its baselines)."""


def worktree(rev: str, where: Path) -> Path:
    """REV checked out at WHERE, laid out as installed (graphs/, nodes/, stores/ linked into
    activerag/), so that PYTHONPATH=WHERE runs its code."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev],
                   check=True, capture_output=True)
    for name in ("graphs", "nodes", "stores"):
        link = where / "activerag" / name
        if not link.exists():
            link.symlink_to(Path("..") / name)
    return where


def methods_of(tree: Path, env: dict[str, str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", "from activerag.graphs.registry import METHODS;"
                          "print(','.join(METHODS))"], env={**env, "PYTHONPATH": str(tree)},
                         capture_output=True, text=True, check=True, cwd=tree)
    return out.stdout.strip().split(",")


def cached(home: Path) -> int:
    """How many entries the LM cache under HOME holds, over all its tables."""
    path = home / "lm-cache.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)


def evaluate(tree: Path, run: Path, methods: list[str], args: argparse.Namespace,
             env: dict[str, str], dataset: str = "demo", n: int | None = None) -> None:
    cmd = [sys.executable, "-m", "activerag.cli", "eval", "--dataset", dataset, "--n",
           str(n or args.n), "--methods", ",".join(methods), "--cache", "--run", str(run),
           "--concurrency", str(args.concurrency), "--base-url", args.base_url,
           "--strong-url", args.base_url, "--light-url", args.base_url]
    if args.store:
        cmd += ["--store", str(args.store)]
    if args.router and {"adaptive_rag", "app"} & set(methods):
        cmd += ["--router", str(args.router)]
    subprocess.run(cmd, env={**env, "PYTHONPATH": str(tree)}, check=True, cwd=tree)


def rows(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for line in (run / "examples.jsonl").read_text().splitlines():
        row = json.loads(line)
        out[row["method"], row["id"]] = {k: v for k, v in row.items() if k not in TIMED}
    return out


def compare(before: dict[tuple[str, str], dict[str, Any]],
            after: dict[tuple[str, str], dict[str, Any]]) -> dict[str, list[str]]:
    """Per method, the fields whose values differ on some question (a missing row: "row")."""
    diff: dict[str, list[str]] = {}
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        fields = ["row"] if a is None or b is None else sorted(
            k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if fields:
            diff.setdefault(key[0], [])
            diff[key[0]] += [f for f in fields if f not in diff[key[0]]]
    return diff


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--before", required=True, help="the earlier commit")
    cli.add_argument("--base-url", required=True)
    cli.add_argument("--store", type=Path, help="the demo store (default: ACTIVERAG_HOME's)")
    cli.add_argument("--n", type=int, default=10)
    cli.add_argument("--methods", help="comma-separated (default: every method both trees have)")
    cli.add_argument("--leave-out", default="", help="comma-separated methods not to run (one "
                     "the server cannot: `activerag doctor` says which)")
    cli.add_argument("--concurrency", type=int, default=2)
    cli.add_argument("--long", type=Path, help="long contexts (`activerag longctx build`'s file) "
                     "for the FB-RAG family's own run")
    cli.add_argument("--long-n", type=int, default=3)
    cli.add_argument("--router", type=Path, help="the router adaptive_rag and the app route "
                     "with (`activerag train-router --out DIR`; any small one will do)")
    cli.add_argument("--after", help="a later commit to run in place of today's tree")
    cli.add_argument("--out", type=Path)
    args = cli.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a stopped run removes its worktree
    with tempfile.TemporaryDirectory(prefix="unchanged-") as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "ACTIVERAG_HOME": str(home)}
        old = worktree(args.before, Path(tmp) / "before")
        new_tree = worktree(args.after, Path(tmp) / "after") if args.after else ROOT
        try:
            common = [m for m in methods_of(new_tree, env) if m in set(methods_of(old, env))]
            methods = [m for m in (args.methods.split(",") if args.methods else common)
                       if m not in args.leave_out.split(",")]
            long = [m for m in LONG if m in methods] if args.long else []
            runs = [("demo", methods, None)] + ([(str(args.long.resolve()), long, args.long_n)]
                                               if long else [])
            for tree, when in ((old, "before"), (new_tree, "after")):
                if when == "after":
                    first = cached(home)
                for i, (dataset, which, n) in enumerate(runs):
                    evaluate(tree, Path(tmp) / f"run-{when}-{i}", which, args, env, dataset, n)
            new = cached(home) - first
            diff: dict[str, list[str]] = {}
            for i, _ in enumerate(runs):
                found = compare(rows(Path(tmp) / f"run-before-{i}"),
                                rows(Path(tmp) / f"run-after-{i}"))
                diff.update({f"{m}{' (long)' if i else ''}": f for m, f in found.items()})
        finally:
            for tree in {old, new_tree} - {ROOT}:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], capture_output=True)
    lines = [f"# Behaviour unchanged since {args.before}"
             + (f", at {args.after}" if args.after else ""), "",
             f"`python -m benchmarks.robustness.unchanged --before {args.before} --n {args.n}"
             f"{f' --after {args.after}' if args.after else ''}`: "
             f"{len(methods)} methods on {args.n} demo questions, the earlier commit's run "
             f"filling one LM cache ({first} entries), today's tree run after it."
             + (f" The FB-RAG family ({len(long)} methods) also on {args.long_n} long contexts "
                f"of `{args.long.name}`." if long else ""), "",
             f"- New LM requests on today's run: **{new}**",
             f"- Methods whose rows differ (wall time aside): **{len(diff)}**"
             + "".join(f"\n  - `{m}`: {', '.join(f)}" for m, f in diff.items()), ""]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines))
    return 0 if new == 0 and not diff else 1


if __name__ == "__main__":
    sys.exit(main())
