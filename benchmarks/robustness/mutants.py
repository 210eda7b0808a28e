"""A kill rate nobody can tune: a seeded random sample of one-token mutants over the modules
outside the pure logic (graphs, node factories, stores, serving, evaluation, the CLI, the page),
each run against the unit tests that execute its line.

    python -m benchmarks.robustness.mutants [--n 200] [--seed 1] [--timeout 300] \
        [--out results/mutants]

In a copy of the checkout laid out as installed: the unit suite runs once under coverage with
each test function as a context (who runs which line); then, for each sampled mutant, its line's
tests run with -x against the mutated copy (a line run at import, outside any test function,
gets the tests that call it, else its file's, and then, if they pass, the whole unit suite; a
test that runs the CLI in a subprocess counts for the lines that process runs). Killed: a test
failed (or the mutant broke the import); survived: they all passed, or no unit test runs the
line. The report gives the kill rate with its 95% (Wilson) interval and every survivor,
marked from benchmarks/robustness/mutants_reviewed.json: "equivalent: why" (left out of the rate) or
"missing test" (counted). A fresh seed draws a fresh sample. A benchmark, not a CI step: it
prints its time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.robustness.breakages import ROOT, check_imports_copy, copy_tree, installed_path
from benchmarks.robustness.mutant_draw import (  # noqa: F401 (the tool's names, also importable from here)
    Mutant,
    apply,
    first_lines,
    in_scope,
    mutants_of,
    relocated,
)

REVIEWED = Path(__file__).with_name("mutants_reviewed.json")


Coverage = dict[str, dict[int, list[str]]]
"""Installed source file -> line -> the unit tests that run it (pytest node ids)."""


def who_runs_what(dest: Path, timeout: float, tests: list[str],
                  kept: Path | None = None) -> tuple[Coverage, dict[str, set[int]]]:
    """For each installed source file in DEST, each line's unit tests (pytest node ids) among
    TESTS (files or folders), those that run fewest lines first (the quick, focused tests: a
    killed mutant is found sooner), and the lines run at import. KEPT: the coverage data
    of an earlier run on the same tree, reused; else it is made, and kept in DEST/.coverage."""
    if kept is None:
        rc = dest / ".coveragerc"
        # a test that runs the CLI in a subprocess covers what that process runs: coverage
        # follows Python subprocesses, whose static context is the test that started them
        # (set by PLUGIN), so that such a test is chosen for the lines it reaches
        rc.write_text("[run]\ndynamic_context = test_function\nsource = activerag\n"
                      "patch = subprocess\nparallel = true\n")
        (dest / "mutants_context.py").write_text(PLUGIN)
        subprocess.run([sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m",
                        "pytest", "-q", "-m", "not integration", "-p", "no:cacheprovider",
                        "-p", "mutants_context", *tests], cwd=dest, capture_output=True,
                       timeout=timeout, env={**os.environ, **data_env(), "PYTHONPATH": str(dest)})
        subprocess.run([sys.executable, "-m", "coverage", "combine", f"--rcfile={rc}"],
                       cwd=dest, capture_output=True)
    from coverage import CoverageData

    data = CoverageData(basename=str(kept or dest / ".coverage"))
    data.read()
    by_file: dict[str, dict[int, set[str]]] = {}
    at_import: dict[str, set[int]] = {}
    footprint: dict[str, int] = {}
    for name in data.measured_files():
        if "/activerag/" not in name:  # a subprocess that imported another copy
            continue
        rel = "activerag/" + name.split("/activerag/", 1)[1]
        by_line = data.contexts_by_lineno(name)
        by_file[rel] = {line: {_node_id(c) for c in ctxs if c} for line, ctxs in by_line.items()}
        at_import[rel] = {line for line, ctxs in by_line.items() if "" in ctxs}
        for ids in by_file[rel].values():
            for node in ids:
                footprint[node] = footprint.get(node, 0) + 1
    out: Coverage = {}
    for rel, lines in by_file.items():
        # A line run at import (a module's constants, its defs, a graph compiled when its
        # module loads) is run outside any test function: the tests that call it, else those
        # of any line of its file, are tried first, and if they pass the whole suite (what a
        # module builds at import, the CLI's flags, a family's rows, a module-level graph, is
        # read by tests that never call into it)
        importers = set().union(*lines.values())
        out[rel] = {line: sorted(ids or importers, key=lambda n: (footprint[n], n))
                    for line, ids in lines.items()}
    return out, at_import


def verdict(dest: Path, tests: list[str], import_time: bool, args: argparse.Namespace) -> str:
    """A mutant's outcome under its covering TESTS, and for a line run at IMPORT_TIME that
    they let survive, under the whole unit suite (args.tests)."""
    if not tests and not import_time:
        return "survived (no test runs it)"
    outcome = run(dest, tests, args.timeout) if tests else "survived"
    if outcome == "survived" and import_time:
        outcome = run(dest, args.tests, max(args.timeout, 900))
        return outcome if outcome.startswith("killed") else outcome + " (whole suite)"
    return outcome


PLUGIN = """import base64
import json
import os

CONFIG = "COVERAGE_PROCESS_CONFIG"
BEFORE = os.environ.get(CONFIG)


def pytest_runtest_setup(item):
    if BEFORE is None:
        return
    config = json.loads(base64.b64decode(BEFORE))
    config["context"] = item.module.__name__.split(".")[-1] + "." + item.name.split("[")[0]
    os.environ[CONFIG] = base64.b64encode(json.dumps(config).encode()).decode()


def pytest_runtest_teardown(item):
    if BEFORE is not None:
        os.environ[CONFIG] = BEFORE
"""
"""A pytest plugin that gives the subprocesses of each test (coverage's config for them, in
the environment they inherit) that test's name as their static context."""


def _node_id(context: str) -> str:
    """'test_x.test_y' (coverage's test_function context, or a subprocess's static one, or
    both joined by '|') as pytest's tests/test_x.py::test_y."""
    context = next((part for part in reversed(context.split("|")) if part), "")
    module, _, function = context.partition(".")
    return f"tests/{module}.py::{function.split('.')[-1]}"


def data_env() -> dict[str, str]:
    """ACTIVERAG_DATA for the copy's tests: the evaluation data folder this checkout finds (the
    copy, in a temporary folder, has no ../shared beside it, so the tests that read the data
    would skip there and their lines count as run by no test); nothing when there is none."""
    from activerag.errors import ActiveRagError
    from activerag.settings import shared_data

    try:
        return {"ACTIVERAG_DATA": str(shared_data())}
    except ActiveRagError:
        return {}


def run(dest: Path, tests: list[str], timeout: float) -> str:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-m", "not integration",
           "-p", "no:cacheprovider", *tests]
    # the copy first on the path of every process a test starts too (one that runs
    # `python -m activerag...` from another folder would import the installed package)
    env = {**os.environ, **data_env(), "PYTHONPATH": os.pathsep.join(
        p for p in (str(dest), os.environ.get("PYTHONPATH", "")) if p)}
    try:
        res = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, timeout=timeout,
                             env=env)
    except subprocess.TimeoutExpired:
        return "survived (timeout)"  # counted as not killed: slow tests, not a hang, likely
    return "survived" if res.returncode == 0 else "killed"


def wilson(k: int, n: int) -> tuple[float, float]:
    if not n:
        return 0.0, 1.0
    z, p = 1.96, k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return mid - half, mid + half


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutant")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "mutants")
    parser.add_argument("--coverage", type=Path, default=None,
                        help="reuse the coverage data an earlier run on this tree kept "
                             "(its who-runs-what step, minutes, is skipped)")
    parser.add_argument("--part", default=None, metavar="A:B",
                        help="run only the drawn mutants A+1..B (1-based), to share a sample "
                             "between processes; their rows go to OUT-seedN-A-B.partial.json")
    parser.add_argument("--merge", nargs="+", type=Path, default=None,
                        help="write the report from these parts' rows instead of running")
    parser.add_argument("--keep-coverage", type=Path, default=None,
                        help="copy the coverage data made of this tree here, for a later "
                             "--coverage (another --part's, or a --rerun's)")
    parser.add_argument("--drawn-at", default=None,
                        help="with --rerun: the commit its report's sample was drawn at, so "
                             "that a survivor whose code has moved since is found again")
    parser.add_argument("--rerun", type=Path, default=None,
                        help="run again only the survivors of this report's JSON, each with "
                             "its covering tests and those of --with (tests written since)")
    parser.add_argument("--with", dest="extra", nargs="*", default=[],
                        help="test files every survivor of --rerun runs too")
    parser.add_argument("--tests", nargs="+", default=["tests"],
                        help="the unit tests whose coverage says who runs what (default: all)")
    args = parser.parse_args()
    started = time.monotonic()
    pool = [m for rel in in_scope() for m in mutants_of(rel)]
    sample = random.Random(args.seed).sample(pool, min(args.n, len(pool)))
    print(f"{len(pool)} mutants in {len(in_scope())} files; {len(sample)} drawn with seed "
          f"{args.seed}", flush=True)
    reviewed = json.loads(REVIEWED.read_text()) if REVIEWED.exists() else {}
    rows: list[dict[str, Any]] = []
    out = args.out.with_name(f"{args.out.name}-seed{args.seed}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge:
        rows = [r for part in args.merge for r in json.loads(part.read_text())]
        rows = [{**r, "review": reviewed.get(r["key"], "")} for r in rows]
        report(rows, args, len(pool), None, out)
        return 0
    if args.rerun:
        rows = rerun(json.loads(args.rerun.read_text()), args, reviewed)
        report(rows, args, len(pool), (time.monotonic() - started) / 60, out)
        return 0
    first = 0
    if args.part:
        first, last = (int(x) for x in args.part.split(":"))
        sample = sample[first:last]
        out = out.with_name(f"{out.name}-{first}-{last}")
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        dest = Path(tmp)
        copy_tree(dest)
        check_imports_copy(dest)
        t0 = time.monotonic()
        coverage, import_time = who_runs_what(dest, 3 * 3600, args.tests, args.coverage)
        if args.keep_coverage and not args.coverage:  # for a second --part's --coverage
            shutil.copy(dest / ".coverage", args.keep_coverage)
        print(f"who runs what: {time.monotonic() - t0:.0f} s", flush=True)
        for i, m in enumerate(sample, 1):
            where = installed_path(m.file)
            original = (dest / where).read_text()
            tests = coverage.get(where, {}).get(m.line, [])
            try:
                compile(apply(original, m), where, "exec")
            except SyntaxError:
                outcome = "killed (syntax)"
            else:
                (dest / where).write_text(apply(original, m))
                outcome = verdict(dest, tests, m.line in import_time.get(where, set()), args)
                (dest / where).write_text(original)
            rows.append({**asdict(m), "key": m.key, "tests": len(tests), "outcome": outcome,
                         "review": reviewed.get(m.key, "")})
            out.with_suffix(".partial.json").write_text(json.dumps(rows, indent=1))
            print(f"[{first + i}/{first + len(sample)}] {outcome:26} {m.key}", flush=True)
    report(rows, args, len(pool), (time.monotonic() - started) / 60, out)
    return 0


def rerun(rows: list[dict[str, Any]], args: argparse.Namespace,
          reviewed: dict[str, str]) -> list[dict[str, Any]]:
    """ROWS with each survivor run again on today's tree: its covering tests (--coverage) and
    those of --with; a survivor whose line has since changed is kept as it was, so marked."""
    out = []
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        dest = Path(tmp)
        copy_tree(dest)
        check_imports_copy(dest)
        coverage, import_time = who_runs_what(dest, 3 * 3600, args.tests, args.coverage)
        if args.keep_coverage and not args.coverage:
            shutil.copy(dest / ".coverage", args.keep_coverage)
        sources = {rel: (dest / installed_path(rel)).read_text() for rel in in_scope()}
        for row in rows:
            if not row["outcome"].startswith("survived"):
                out.append(row)
                continue
            m = Mutant(row["file"], row["line"], row["operator"], row["before"], row["after"],
                       tuple(row["start"]), tuple(row["end"]))  # type: ignore[arg-type]
            found = relocated(sources, m, first_lines(args.drawn_at, m))
            if found is None:
                moved = row["outcome"].split(" (line since changed)")[0]
                out.append({**row, "outcome": moved + " (line since changed)"})
                continue
            m = found
            where, original = installed_path(m.file), sources[m.file]
            # the tests written since first: a covering test the mutant sends into a slow path
            # (a real build) would time out before them, and a timeout counts as a survivor
            tests = [*args.extra, *coverage.get(where, {}).get(m.line, [])]
            (dest / where).write_text(apply(original, m))
            outcome = verdict(dest, tests, m.line in import_time.get(where, set()), args)
            (dest / where).write_text(original)
            out.append({**row, "tests": len(tests), "outcome": outcome,  # its first key
                        "review": reviewed.get(row["key"], "")})
            print(f"{outcome:26} {m.key}", flush=True)
    return out


def _outcome(text: str) -> str:
    """A survivor's outcome for the table: why its tests passed, if not because all ran."""
    return text.removeprefix("survived").strip(" ()").replace(") (", ", ") or "all passed"


def report(rows: list[dict[str, Any]], args: argparse.Namespace, pool: int,
           minutes: float | None, out: Path) -> None:
    """The kill rate with its interval and every survivor with its review, as Markdown (and
    the rows as JSON) at OUT.md and OUT.json."""
    equivalent = [r for r in rows if r["review"].startswith("equivalent")]
    counted = [r for r in rows if r not in equivalent]
    killed = sum(r["outcome"].startswith("killed") for r in counted)
    low, high = wilson(killed, len(counted))
    took = f"{minutes:.0f} min" if minutes is not None else "merged from parts run side by side"
    lines = [f"# Random mutants outside the pure logic (seed {args.seed})", "",
             f"`python -m benchmarks.robustness.mutants --n {args.n} --seed {args.seed}`: {pool} "
             f"candidate mutants in {len(in_scope())} files, {len(rows)} drawn, {took}.", "",
             f"**Killed {killed} of {len(counted)} non-equivalent mutants: "
             f"{killed / max(len(counted), 1):.1%} [{low:.1%}, {high:.1%}]** "
             f"({len(equivalent)} reviewed as equivalent and left out; goal 90%).", "",
             "| survivor | operator | tests run | outcome | review |", "|---|---|---|---|---|"]
    survivors = [r for r in rows if r["outcome"].startswith("survived")]
    lines += [f"| `{r['key'].replace('|', '¦')}` | {r['operator']} | {r['tests']} | "
              f"{_outcome(r['outcome'])} | {r['review'] or 'unreviewed'} |" for r in survivors]
    out.with_suffix(".partial.json").unlink(missing_ok=True)
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))

if __name__ == "__main__":
    sys.exit(main())
