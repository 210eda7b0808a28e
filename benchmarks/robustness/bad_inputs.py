"""Bad inputs given to the real CLI, one table (issue #19): results/bad-inputs.md.

    python -m benchmarks.robustness.bad_inputs [--out results/bad-inputs.md] [--jobs 2] [--keep]
                                    [--overlong-url URL]

Every case runs `activerag ...` as a process of its own, in a folder of its own with its own
ACTIVERAG_HOME, and reads back what the user saw (stderr, else stdout), the exit code, whether
a traceback was printed, and what changed on disk: every file under the case's folder (its
inputs, its home, its copy of a small BM25 store, its run folder, its checkpoint file) and the
outside paths it names is hashed (size and sha256) before and after.

No case reaches a language model. Every endpoint is a port nothing listens on (DOWN), so a
case the CLI does not refuse up front ends at "server down"; the cases whose input is read only
after the server check (a store, a checkpoint file) are pointed at a stand-in of this script's
(MODELS) that lists one model and refuses every other request. The overlong-prompt case needs a
live server and sends it a full-window prompt, so it runs only with --overlong-url.
The script exits non-zero if any row shows a traceback or a loss.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from activerag.demo import DEMO_CORPUS
from benchmarks.publish import publish
from benchmarks.robustness.bad_input_cases import (
    MODELS,
    QUESTION,
    STORE_ROWS,
    Arg,
    Case,
    cases,
)

ROOT = Path(__file__).resolve().parents[2]

TIMEOUT = 240
"""Seconds a case may run: a CLI start takes 15-90 s on 2 cores shared with other work."""

Snapshot = dict[str, tuple[int, str]]


@dataclass
class Row:
    case: str
    command: str
    sees: str
    code: int | str
    traceback: bool
    disk: str
    lost: bool


# -- running one -------------------------------------------------------------------------------

def snapshot(paths: list[Path], base: Path) -> Snapshot:
    """Size and sha256 of every file under PATHS, keyed by path (relative to BASE if under it)."""
    out: Snapshot = {}
    for top in paths:
        files = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for f in files:
            if f.is_file():
                data = f.read_bytes()
                key = str(f.relative_to(base)) if f.is_relative_to(base) else str(f)
                out[key] = (len(data), hashlib.sha256(data).hexdigest())
        if top.is_dir() and not files:
            out[str(top) + "/"] = (0, "")
    return out


def compare(before: Snapshot, after: Snapshot, d: Path, ok: bool,
            rewrites: tuple[str, ...]) -> tuple[str, bool]:
    """What changed between two snapshots, and whether anything was lost: a file removed, cut
    short, or rewritten (its old bytes no longer its start) where the case may not rewrite it."""
    removed = [k for k in before if k not in after]
    added = [k for k in after if k not in before]
    grown, rewritten = [], []
    for k in before.keys() & after.keys():
        (size, digest), (new_size, new_digest) = before[k], after[k]
        if digest == new_digest:
            continue
        path = d / k if not k.startswith("/") else Path(k)
        head = hashlib.sha256(path.read_bytes()[:size]).hexdigest() if new_size >= size else ""
        (grown if head == digest else rewritten).append(k)
    allowed = [k for k in rewritten if ok and k.startswith(rewrites)]
    lost = removed + [k for k in rewritten if k not in allowed]
    parts = []
    if removed:
        parts.append("REMOVED " + ", ".join(sorted(removed)))
    if lost != removed:
        parts.append("REWRITTEN " + ", ".join(sorted(set(lost) - set(removed))))
    if grown:
        parts.append("appended to " + ", ".join(sorted(grown)))
    if allowed:
        parts.append("rewrote " + ", ".join(sorted(allowed)))
    if added:
        parts.append("created " + ", ".join(sorted(added)[:4])
                     + (f" (+{len(added) - 4})" if len(added) > 4 else ""))
    return "; ".join(parts) or "nothing", bool(lost)


def plain(text: str, d: Path, down: str) -> str:
    """TEXT with the case folder, the endpoints and the question named short."""
    for long, short in ((str(d) + "/", ""), (down, "DOWN"), (MODELS.url, "MODELS"),
                        (QUESTION, "Q")):
        text = text.replace(long, short)
    return text


def shown(args: list[Arg], d: Path, down: str) -> str:
    words = []
    for a in args:
        text = plain(repr(a)[1:] if isinstance(a, bytes) else a, d, down)
        words.append(text if text and re.fullmatch(r"[\w./:=,-]+", text) else json.dumps(text))
    return "`activerag " + " ".join(words) + "`"


PROGRESS = re.compile(r"^[^\[\n]*\[\d+:\d\d[^\]]*\]")
"""A tqdm progress bar at the start of a line ("ingest x.jsonl: 0 passages [00:00, ...]")."""


def seen(proc: subprocess.CompletedProcess[bytes]) -> str:
    """What the user sees: the first line of stderr (else stdout) that is not a progress bar;
    after a traceback, its last line (the exception) instead of its first."""
    for stream in (proc.stderr, proc.stdout):
        text = stream.decode(errors="replace")
        lines = [PROGRESS.sub("", ln).strip() for ln in re.split(r"[\r\n]+", text)]
        lines = [ln for ln in lines if ln]
        if not lines:
            continue
        if lines[0].startswith("Traceback"):
            tail = [ln for ln in lines if not ln.startswith(("File ", "^", "~"))]
            return tail[-1]
        return lines[0]
    return "(nothing)"


def cell(text: str, width: int = 220) -> str:
    text = text if len(text) <= width else text[:width - 1] + "…"
    return text.replace("|", "\\|").replace("\n", " ")


def run_case(case: Case, work: Path, store: Path, down: str, env: dict[str, str]) -> Row:
    d = work / re.sub(r"\W+", "-", case.name.lower()).strip("-")[:60]
    (d / "home").mkdir(parents=True)
    MODELS.vouch(d / "home")
    if case.store:
        shutil.copytree(store, d / "store")
    if case.prepare:
        case.prepare(d)
    args = case.args(d, down)
    command = shown(args, d, down)
    if case.skip:
        return Row(case.name, command, case.skip, "-", False, "-", False)
    watched = [d, *map(Path, case.outside)]
    before = snapshot(watched, d)
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "activerag.cli", *args], cwd=d,
                              env={**env, "ACTIVERAG_HOME": str(d / "home"), **case.env},
                              capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        proc = subprocess.CompletedProcess(exc.cmd, 124, exc.stdout or b"", exc.stderr or b"")
        print(f"{case.name}: timed out after {TIMEOUT} s", file=sys.stderr)
    after = snapshot(watched, d)
    disk, lost = compare(before, after, d, proc.returncode == 0, case.rewrites)
    missing = case.check(d, proc) if case.check else ""
    if missing:
        disk, lost = f"{missing}; {disk}", True
    output = proc.stdout + proc.stderr
    code: int | str = proc.returncode if proc.returncode != 124 else f"timeout {TIMEOUT} s"
    print(f"{case.name}: exit {code} in {time.monotonic() - started:.0f} s", file=sys.stderr,
          flush=True)
    return Row(case.name, command, plain(seen(proc), d, down), code, b"Traceback" in output,
               disk, lost)


def base_env(down: str) -> dict[str, str]:
    """The parent's environment without its ACTIVERAG_ settings, every endpoint down, offline."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ACTIVERAG_") or k == "ACTIVERAG_DATA"}
    return {**env, "ACTIVERAG_BASE_URL": down, "ACTIVERAG_STRONG_URL": down,
            "ACTIVERAG_LIGHT_URL": down, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore",
            "COLUMNS": "200"}


def dead_url() -> str:
    """An endpoint on a port nothing listens on (bound for a moment, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def small_store(work: Path, env: dict[str, str]) -> Path:
    """STORE_ROWS demo passages ingested (BM25 only) by the CLI itself."""
    corpus = work / "seed.jsonl"
    corpus.write_text("".join(DEMO_CORPUS.read_text().splitlines(keepends=True)[:STORE_ROWS]))
    store = work / "seed-store"
    subprocess.run([sys.executable, "-m", "activerag.cli", "ingest", str(corpus), "--store",
                    str(store), "--no-dense"], env={**env, "ACTIVERAG_HOME": str(work / "home")},
                   check=True, capture_output=True, timeout=TIMEOUT)
    return store


# -- the table ---------------------------------------------------------------------------------

def table(rows: list[Row]) -> str:
    lines = ["| case | command | what the user sees | exit | traceback | lost or changed on "
             "disk |", "|---|---|---|---|---|---|"]
    lines += [f"| {cell(r.case)} | {cell(r.command, 400)} | {cell(r.sees)} | {r.code} | "
              f"{'**yes**' if r.traceback else 'no'} | "
              f"{'**LOSS**: ' if r.lost else ''}{cell(r.disk)} |" for r in rows]
    return "\n".join(lines) + "\n"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(ROOT / "results" / "bad-inputs.md"))
    p.add_argument("--jobs", type=int, default=2, help="cases run at once (2)")
    p.add_argument("--overlong-url", default="",
                   help="a live server (…/v1) for the overlong-prompt case; default: not run")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="activerag-bad-inputs-"))
    began = time.monotonic()
    down = dead_url()
    env = base_env(down)
    MODELS.start()
    try:
        store = small_store(work, env)
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda c: run_case(c, work, store, down, env),
                                 cases(args.overlong_url)))
    finally:
        MODELS.stop()
        if args.keep:
            print(f"work folder: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    ran = [r for r in rows if r.code != "-"]
    bad = [r for r in rows if r.traceback or r.lost]
    text = (
        f"`python -m benchmarks.robustness.bad_inputs` on {date.today().isoformat()}, "
        f"commit {commit()} "
        f"({time.monotonic() - began:.0f} s; {len(ran)} of {len(rows)} cases run, "
        f"{len(bad)} with a traceback or a loss). Each case is one `activerag` process (timeout "
        f"{TIMEOUT} s) in a temporary folder with its own ACTIVERAG_HOME; every LM endpoint is "
        "a port nothing listens on (DOWN), so a case the CLI does not refuse up front ends at "
        "\"server down\", except the store and checkpoint cases, pointed at a stand-in "
        "(MODELS) that lists one model and refuses every other request, so that the CLI gets "
        f"past its server check to the input; Q is the question \"{QUESTION}\"; store cases "
        f"start from a copy of a {STORE_ROWS}-passage demo store (BM25 only, "
        "`--no-dense`) in `store/`. Columns: *case*, the bad input; *command*, the "
        "arguments (paths relative to the case folder); *what the user sees*, the first line of "
        "stderr, or of stdout if stderr is empty, progress bars left out and, after a "
        "traceback, the exception's line; *exit*, the exit code; *traceback*, whether the "
        "output holds \"Traceback\"; *lost or changed on disk*, the files under the case "
        "folder (and the outside path it names) compared by size and sha256 before and after: "
        "a LOSS is a file removed, or rewritten so that its old bytes are no longer its start "
        "(a successful ingest may rewrite the BM25 index, Punkt and the store manifest), or an "
        "expected result missing (the good rows of a corpus with one bad row).\n\n"
        + table(rows))
    publish(text, args.out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
