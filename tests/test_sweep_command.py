"""`activerag sweep KIND` runs that one sweep, `sweep all` every sweep in SWEEPS in order, each
into its own folder under --out, printing its table and its plot's path (issue #38). The
dataset and the sweeps' runs are stood in: no LM is asked."""

import pytest

import activerag.evaluation.datasets
import activerag.evaluation.sweeps
from activerag import cli
from activerag.evaluation.sweeps import SWEEPS


@pytest.fixture
def swept(monkeypatch, own_home):
    ran = []

    async def run_sweep(name, folder, dataset, examples, ctx, concurrency, only):
        ran.append((name, folder.name, dataset, concurrency, only))
        folder.mkdir(parents=True)
        (folder / f"{name}.md").write_text(f"table of {name}\n")

    monkeypatch.setattr(activerag.evaluation.sweeps, "run_sweep", run_sweep)
    monkeypatch.setattr(activerag.evaluation.datasets, "load_dataset", lambda name, n: [])
    return ran


def test_one_kind_runs_that_sweep_alone(swept, tmp_path, capsys):
    assert cli.main(["sweep", "theta", "--out", str(tmp_path), "--concurrency", "2"]) == 0
    assert swept == [("theta", "theta", "2wiki", 2, None)]
    out = capsys.readouterr().out
    assert "table of theta" in out and f"plot: {tmp_path / 'theta' / 'theta.png'}" in out


def test_all_runs_every_sweep_in_order(swept, tmp_path):
    assert cli.main(["sweep", "all", "--out", str(tmp_path)]) == 0
    assert [name for name, *_ in swept] == list(SWEEPS)
    assert all(folder == name for name, folder, *_ in swept)
