"""Which hand-made one-line breakages the unit tests catch (issue #19).

Each breakage is one exact edit of today's code. The tracked tree is copied once to a temp
folder laid out as installed (graphs/, nodes/, stores/ also under activerag/, as `make
mutation` does), so that `python -m pytest` run there imports the copy: its current folder
comes first on sys.path, before the editable install's finder. Each edit is applied to the
copy, its unit test files run with -x, and the file is put back. The working tree is never
written to. A run whose tests fail (or fail to import) caught the breakage.

    python -m benchmarks.robustness.breakages            # all breakages, after a clean baseline run
    python -m benchmarks.robustness.breakages replug_k   # only the named ones
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graphs", "nodes", "stores")
"""Source folders installed as activerag.<name>."""
CAUGHT_TESTS = "tests/test_breakages_caught.py"
"""The tests written to catch these breakages; every breakage runs them too."""


@dataclass(frozen=True)
class Breakage:
    """One edit: OLD (found exactly once in FILE) replaced by NEW; TESTS catch it."""

    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


BREAKAGES = [
    Breakage("replug_k", "graphs/registry.py",
             '        skip = own_fields().get(record.context, frozenset()) | {"k"}',
             "        skip = set()",
             ("tests/test_method_suggestions.py",)),
    Breakage("answer_letters", "activerag/evaluation/datasets.py",
             "    if isinstance(value, str | int | float):\n        return [str(value)]",
             "    if isinstance(value, str | int | float):\n        return list(str(value))",
             ("tests/test_datasets.py", "tests/test_eval_input_errors.py")),
    Breakage("fit_documents_reserve", "nodes/replug/tokens.py",
             "    room = window - reserve\n", "    room = window\n",
             ("tests/test_replug_logic.py", "tests/test_replug_graph.py")),
    Breakage("flare_replug_tokens_left", "nodes/replug/flare_replug.py",
             "        budget = min(ctx.max_sentence_tokens,\n"
             '                     ctx.max_answer_tokens - state.get("answer_tokens", 0))',
             "        budget = min(ctx.max_sentence_tokens,\n"
             "                     ctx.max_answer_tokens)",
             ("tests/test_replug_graph.py", "tests/test_replug_text.py")),
    Breakage("cache_drops_alternatives", "activerag/serving/cache.py",
             'data["tokens"] = [Token(**{**t, "top": tuple(t.get("top", ()))})',
             'data["tokens"] = [Token(**{**t, "top": ()})',
             ("tests/test_cache_key.py", "tests/test_cache_served.py",
              "tests/test_cache_concurrency.py")),
    Breakage("token_lm_500_not_retried", "activerag/serving/token_lm.py",
             "        if resp.status_code >= 500:", "        if resp.status_code >= 503:",
             ("tests/test_retry.py", "tests/test_replug_graph.py")),
    Breakage("token_lm_finish_reason", "activerag/serving/token_lm.py",
             'return Steps(positions, choice.get("finish_reason") == "stop",',
             'return Steps(positions, choice.get("finish_reason") == "length",',
             ("tests/test_retry.py", "tests/test_replug_graph.py")),
    Breakage("combined_no_dedup", "nodes/loop.py",
             "        have = {d.id or d.page_content for d in docs}",
             "        have: set[str] = set()",
             ("tests/test_schedules.py", "tests/test_graph_routing.py")),
    Breakage("single_answer_tokens", "nodes/flare/single.py",
             "    kept = sum(1 for t in gen.tokens if t.start < len(answer))",
             "    kept = len(gen.tokens)",
             ("tests/test_schedules.py",)),
    Breakage("single_max_sentences", "nodes/flare/single.py",
             "    spans = spans[: ctx.max_sentences]", "    spans = spans[:]",
             ("tests/test_schedules.py",)),
    Breakage("previous_sentence_count", "graphs/previous.py",
             'count_sentences=unit == "sentence"', "count_sentences=False",
             ("tests/test_schedules.py",)),
    Breakage("fit_never_shrinks", "activerag/serving/token_lm.py",
             "        limit -= over\n", "        limit -= 0\n",
             ("tests/test_fb_rag_logic.py", "tests/test_fb_rag_graph.py",
              "tests/test_replug_graph.py")),
    Breakage("fb_rag_read_words_equal", "nodes/fb_rag/steps.py",
             "        if ctx.read_words >= words and", "        if ctx.read_words > words and",
             ("tests/test_fb_rag_logic.py", "tests/test_fb_rag_graph.py")),
    Breakage("bm25_stale_index", "stores/bm25.py",
             "            self._index = None\n            self._fast = None\n",
             "            self._index = None\n",
             ("tests/test_bm25_index.py", "tests/test_ingest.py")),
    Breakage("chroma_distance", "stores/chroma.py",
             'hits.append((doc, 1.0 - float(res["distances"][q][j]), vector))',
             'hits.append((doc, float(res["distances"][q][j]), vector))',
             ("tests/test_build_once.py",)),
    Breakage("chroma_readds_known", "stores/chroma.py",
             "            new = [d for d in chunk if d.id not in have]",
             "            new = list(chunk)",
             ("tests/test_build_once.py",)),
    Breakage("lm_one_alternative", "activerag/serving/lm.py",
             '            "logprobs": self.top_logprobs,', '            "logprobs": 1,',
             ("tests/test_lm.py", "tests/test_triggers.py")),
    Breakage("damaged_only_unwarned", "activerag/evaluation/evaluate.py",
             "        return list(out.values()), damaged\n",
             "        return list(out.values()), damaged if out else 0\n",
             ("tests/test_evaluate.py", "tests/test_durable.py")),
    Breakage("report_flag_from_queries", "activerag/evaluation/report.py",
             'flag = "RETRIEVED" if step["retrieved"] else "kept"',
             'flag = "RETRIEVED" if step["queries"] else "kept"',
             ("tests/test_server.py",)),
    Breakage("page_unfinished_end", "activerag/page/record.py",
             "        if record.complete:\n            count[END] = 1",
             "        count[END] = 1",
             ("tests/test_page.py",)),
    Breakage("page_start_edge", "activerag/page/record.py",
             "    path = [START, *record.path,", "    path = [*record.path,",
             ("tests/test_page.py",)),
]


def copy_tree(dest: Path) -> None:
    """The tracked and untracked-but-not-ignored files, laid out as installed."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for pkg in PACKAGES:
        shutil.copytree(dest / pkg, dest / "activerag" / pkg)


def installed_path(rel: str) -> str:
    """Where FILE lies in the installed layout (what lies in graphs/ is activerag/graphs/)."""
    return f"activerag/{rel}" if rel.split("/")[0] in PACKAGES else rel


def check_imports_copy(dest: Path) -> None:
    """Refuse to run unless `import activerag.nodes` there resolves to the copy."""
    probe = ("import activerag, activerag.nodes, activerag.graphs, activerag.stores; "
             "print(activerag.__file__, activerag.nodes.__file__, activerag.graphs.__file__, "
             "activerag.stores.__file__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=dest, check=True,
                         capture_output=True, text=True).stdout.split()
    stray = [p for p in out if not Path(p).resolve().is_relative_to(dest.resolve())]
    if stray:
        sys.exit(f"the copy at {dest} imports {stray} from outside it; nothing would be measured")


def run_tests(dest: Path, tests: tuple[str, ...], timeout: float) -> tuple[int | None, str]:
    """Pytest's exit status on TESTS in DEST (None: timed out) and its last line."""
    cmd = [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-m", "not integration",
           "-p", "no:cacheprovider"]
    try:
        res = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
    return res.returncode, lines[-1] if lines else ""


def tests_of(b: Breakage, dest: Path) -> tuple[str, ...]:
    return tuple(t for t in (*b.tests, CAUGHT_TESTS) if (dest / t).exists())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these breakages")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip checking that the unbroken copy passes the tests")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per pytest run")
    args = parser.parse_args()
    chosen = [b for b in BREAKAGES if not args.names or b.name in args.names]
    unknown = set(args.names) - {b.name for b in BREAKAGES}
    if unknown:
        sys.exit(f"unknown breakages {sorted(unknown)}; known: {[b.name for b in BREAKAGES]}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="breakages-") as tmp:
        dest = Path(tmp)
        copy_tree(dest)
        check_imports_copy(dest)
        for b in chosen:  # every edit must still apply to today's code
            for where in {b.file, installed_path(b.file)}:
                found = (dest / where).read_text().count(b.old)
                if found != 1:
                    sys.exit(f"{b.name}: the old text occurs {found} times in {b.file}; update it")
        if not args.no_baseline:
            union = tuple(dict.fromkeys(t for b in chosen for t in tests_of(b, dest)))
            rc, last = run_tests(dest, union, args.timeout * 3)
            if rc != 0:
                sys.exit(f"the unbroken copy fails its tests ({last}); fix that first")
        rows = []
        for b in chosen:
            originals = {}
            for where in {b.file, installed_path(b.file)}:
                originals[where] = (dest / where).read_text()
                (dest / where).write_text(originals[where].replace(b.old, b.new))
            t0 = time.monotonic()
            rc, last = run_tests(dest, tests_of(b, dest), args.timeout)
            for where, text in originals.items():
                (dest / where).write_text(text)
            caught = "yes" if rc in (1, 2) else "no" if rc == 0 else f"? (rc {rc})"
            rows.append((b.name, b.file, caught, time.monotonic() - t0, last))
            print(f"{b.name:28} {caught:4} {rows[-1][3]:6.1f}s  {last}", flush=True)
    width = max(len(r[0]) for r in rows)
    print(f"\n{'breakage':{width}}  {'file':34} caught")
    for name, file, caught, _, _ in rows:
        print(f"{name:{width}}  {file:34} {caught}")
    n = sum(r[2] == "yes" for r in rows)
    print(f"caught {n}/{len(rows)} ({100 * n / len(rows):.0f}%) in "
          f"{time.monotonic() - started:.0f} s")
    return 0 if n == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
