"""How long the CLI takes to start (issue #39: `activerag --help` and `ask --help` under 0.5 s).

    python -m benchmarks.cost.startup [--runs 7]

Each command runs RUNS times in a fresh interpreter (`python -m activerag.cli ...`); prints the
median and the fastest wall time, and the heaviest imports of one `--help` (python -X
importtime), so that a regression names its cause. Measure on an idle machine: a loaded one
doubles the numbers. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = (["--help"], ["ask", "--help"], ["eval", "--help"])


def wall(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "activerag.cli", *args], check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def heaviest(args: list[str], n: int = 8) -> list[tuple[int, str]]:
    """The N top-level imports of one run that took longest (cumulative microseconds)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "activerag.cli", *args],
                         capture_output=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and parts[2].startswith(" ") and \
                not parts[2].startswith("  "):  # a top-level import (one space of indent)
            rows.append((int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    base = statistics.median(wall_python() for _ in range(args.runs))
    print(f"python -c pass: median {base:.3f} s (the interpreter alone)")
    for command in COMMANDS:
        times = [wall(command) for _ in range(args.runs)]
        print(f"activerag {' '.join(command):12} median {statistics.median(times):.3f} s, "
              f"fastest {min(times):.3f} s over {args.runs} runs")
    print("heaviest top-level imports of `activerag --help` (ms, cumulative):")
    for us, name in heaviest(["--help"]):
        print(f"  {us / 1000:7.1f}  {name}")
    return 0


def wall_python() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
