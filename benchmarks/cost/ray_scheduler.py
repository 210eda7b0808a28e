"""What Ray's actor pool costs and gives (issue #57): `eval --ray` against a fake LM of fixed
latency, so that what is measured is the scheduler, not the LM.

    python -m benchmarks.cost.ray_scheduler [--keys 240] [--latency 0.2] [--actors 1,2,4,8]
        [--concurrency 4] [--out results/ray-scheduler.md]

Every key is one question of a made-up jsonl dataset answered by `none` (one LM call, no
retrieval): a call takes LATENCY seconds at the fake server, which answers any number at once.
A local `eval` at --concurrency C is the baseline; then `eval --ray` on a Ray of this process's
own (one node, every process on 127.0.0.1) with 1, 2, 4 and 8 actors answering C questions
each. For each: the wall time, the time to the first row (the actors' start: each imports the
package and builds its graphs), the steady rate after it, and the efficiency against the ideal
(keys × latency / (actors × C)). The per-row overhead Ray adds is (Ray's wall with one actor -
the local wall) / keys. Also `import activerag` and `activerag --help`, with Ray installed and
with it hidden. Writes the table, and a plot of rows/s against actors beside the ideal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from activerag.context import FlareContext
from activerag.evaluation.datasets import load_dataset
from activerag.evaluation.evaluate import Run, evaluate, method_runs
from activerag.evaluation.on_ray import evaluate_on_ray
from activerag.testing.fake_lm import Backend, backend
from activerag.testing.ray_nodes import isolate

ROOT = Path(__file__).resolve().parents[2]
ACTOR_CPUS = 0.25
"""CPUs reserved for each actor (--actor-cpus): the LM is elsewhere, so 8 fit on 2 cores."""


def dataset(folder: Path, keys: int) -> Path:
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Who founded company {i}?",
                                        "answers": ["Kelmor"]}) + "\n" for i in range(keys)))
    return path


def timed(argv: list[str], env: dict[str, str] | None = None, repeats: int = 3) -> float:
    """The median seconds of running ARGV (a fresh interpreter each time)."""
    took = []
    for _ in range(repeats):
        began = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env={**os.environ, **(env or {})})
        took.append(time.perf_counter() - began)
    return statistics.median(took)


def start_times(folder: Path) -> dict[str, float]:
    """`import activerag` and `activerag --help`, with Ray installed and with it hidden (a
    `ray` package on PYTHONPATH that fails to import, as where the extra is not installed)."""
    hidden = folder / "no-ray" / "ray"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    py = [sys.executable]
    out = {}
    for label, env in (("installed", None), ("hidden", {"PYTHONPATH": str(hidden.parent)})):
        out[f"import activerag, Ray {label}"] = timed([*py, "-c", "import activerag"], env)
        out[f"activerag --help, Ray {label}"] = timed([*py, "-m", "activerag.cli", "--help"],
                                                      env)
    return out


def measure(keys: int, latency: float, actors: list[int], concurrency: int,
            work: Path) -> dict[str, Any]:
    examples = load_dataset(str(dataset(work, keys)))
    fake = Backend(latency=latency)
    rows: list[dict[str, Any]] = []
    with backend(fake) as url:
        runs = method_runs(["none"], FlareContext(base_url=url, max_answer_tokens=8))
        began = time.perf_counter()
        asyncio.run(evaluate(Run(work / "local"), "bench", runs, examples, concurrency,
                             progress=False))
        local = time.perf_counter() - began
        rows.append({"how": f"local eval, concurrency {concurrency}", "actors": 0,
                     "wall": local, "first": None, "ideal": keys * latency / concurrency})
        for n in actors:
            began = time.perf_counter()
            summary = evaluate_on_ray(Run(work / f"ray-{n}"), "bench", runs, examples,
                                      address=None, actors=(n, n), concurrency=concurrency,
                                      actor_cpus=ACTOR_CPUS, progress=False)
            wall = time.perf_counter() - began
            assert summary["finished"] == keys, summary
            rows.append({"how": f"eval --ray, {n} actor(s) × {concurrency}", "actors": n,
                         "wall": wall, "first": summary["ray"]["first_row_seconds"],
                         "ideal": keys * latency / (n * concurrency)})
            print(f"{n} actor(s): {wall:.1f} s", file=sys.stderr)
    return {"keys": keys, "latency": latency, "concurrency": concurrency, "rows": rows,
            "overhead_per_row": (rows[1]["wall"] - local) / keys if len(rows) > 1 else None,
            "requests": len(fake.requests)}


def table(result: dict[str, Any], starts: dict[str, float]) -> str:
    keys = result["keys"]
    lines = ["| run | wall s | to the first row s | steady rows/s | ideal s | efficiency "
             "(ideal / wall) | steady efficiency |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        steady_s = r["wall"] - (r["first"] or 0.0)
        rate = (keys - (1 if r["first"] else 0)) / steady_s if steady_s > 0 else float("nan")
        ideal_rate = keys / r["ideal"]
        first = f"{r['first']:.1f}" if r["first"] is not None else "-"
        lines.append(f"| {r['how']} | {r['wall']:.1f} | {first} | {rate:.1f} | "
                     f"{r['ideal']:.1f} | {r['ideal'] / r['wall']:.2f} | "
                     f"{rate / ideal_rate:.2f} |")
    lines += ["", "| start | seconds (median of 3) |", "|---|---|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in starts.items()]
    return "\n".join(lines)


def overhead(result: dict[str, Any]) -> str:
    """What one actor costs over a local eval at the same concurrency, whole and steady."""
    local, one = result["rows"][0], result["rows"][1]
    keys = result["keys"]
    steady_one = (keys - 1) / (one["wall"] - one["first"])
    return (f"Ray's cost over a local eval at the same concurrency (one actor): "
            f"{result['overhead_per_row'] * 1000:.0f} ms a row over the whole run, where the "
            f"actor's start (to the first row) took {one['first']:.1f} s; after it, "
            f"{steady_one:.1f} rows/s against the local eval's {keys / local['wall']:.1f} "
            f"({(1 / steady_one - local['wall'] / keys) * 1000:+.0f} ms a row).")


def plot(result: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ray_rows = [r for r in result["rows"] if r["actors"]]
    n = [r["actors"] for r in ray_rows]
    keys = result["keys"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(n, [keys / r["ideal"] for r in ray_rows], "k--", label="ideal")
    ax.plot(n, [keys / r["wall"] for r in ray_rows], "o-", label="eval --ray, whole run")
    ax.plot(n, [(keys - 1) / (r["wall"] - r["first"]) for r in ray_rows], "s-",
            label="eval --ray, after the first row")
    local = result["rows"][0]
    ax.axhline(keys / local["wall"], color="grey", lw=1, label="local eval")
    ax.set_xscale("log", base=2)
    ax.set_xticks(n, [str(x) for x in n])
    ax.set_xlabel(f"actors (each answering {result['concurrency']} at once)")
    ax.set_ylabel("rows / s")
    ax.set_title(f"{keys} keys, a fake LM of {result['latency'] * 1000:.0f} ms a call")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keys", type=int, default=240)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--actors", default="1,2,4,8")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "ray-scheduler.md")
    args = p.parse_args()
    isolate()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="activerag-ray-bench-") as tmp:
        work = Path(tmp)
        starts = start_times(work)
        result = measure(args.keys, args.latency, [int(a) for a in args.actors.split(",")],
                         args.concurrency, work)
    text = (f"# `eval --ray`'s scheduler against a fake LM of fixed latency "
            f"(benchmarks/cost/ray_scheduler.py)\n\n`python -m benchmarks.cost.ray_scheduler "
            f"--keys {args.keys} --latency {args.latency:g} --actors {args.actors} "
            f"--concurrency {args.concurrency}` ({time.perf_counter() - began:.0f} s on "
            f"{os.cpu_count()} cores; one Ray node of the run's own, {ACTOR_CPUS:g} CPU reserved "
            f"for each actor; `none` on a made-up "
            f"dataset, {result['requests']} LM requests in all)\n\n"
            + table(result, starts) + "\n\n" + overhead(result) + "\n")
    args.out.write_text(text)
    plot(result, args.out.with_suffix(".png"))
    args.out.with_suffix(".json").write_text(json.dumps({**result, "starts": starts}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
