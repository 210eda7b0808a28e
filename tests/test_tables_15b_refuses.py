"""results/tables_15b.py run without its runs (issue #58): it refuses, says what to run, and
leaves the committed models-side-by-side.md as it was, where it once rewrote 91 lines as 6."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_side_by_side_report_without_its_runs_writes_nothing(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results, ignore=shutil.ignore_patterns(
        "runs-*", "accounting-rows", "*.png"))
    before = (results / "models-side-by-side.md").read_text()
    done = subprocess.run([sys.executable, "results/tables_15b.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "runs/ lacks " in done.stderr and "2wiki-main-n200-15b-flare" in done.stderr
    assert "results/run_all.sh's 1.5B section" in done.stderr
    assert "Traceback" not in done.stderr
    assert (results / "models-side-by-side.md").read_text() == before
