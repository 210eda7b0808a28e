"""Every sweep variant reaches its run with its own settings (issue #38): run_sweep hands the
harness, for each variant of each sweep, the variant's method graph under the run's context
with the variant's overrides, and no two variants of a sweep run alike."""

from __future__ import annotations

import asyncio
from dataclasses import asdict

import pytest

from activerag.context import FlareContext
from activerag.evaluation import sweeps
from activerag.graphs.registry import METHODS


@pytest.mark.parametrize("name", list(sweeps.SWEEPS))
def test_each_variant_runs_its_method_with_its_overrides(name, tmp_path, monkeypatch):
    handed = {}

    async def capture(run, dataset, runs, examples, concurrency, metrics_url=None):
        handed.update(runs)
        raise StopAsyncIteration

    monkeypatch.setattr(sweeps, "evaluate", capture)
    base = FlareContext(store_dir="/corpus", k=3)
    with pytest.raises(StopAsyncIteration):
        asyncio.run(sweeps.run_sweep(name, tmp_path, "t", [], base))
    assert list(handed) == [label for label, *_ in sweeps.SWEEPS[name]]
    seen = []
    for label, _, method, overrides in sweeps.SWEEPS[name]:
        graph, ctx = handed[label]
        assert graph is METHODS[method].graph, label
        assert {k: getattr(ctx, k) for k in overrides} == overrides, label
        assert ctx.k == 3 and ctx.store_dir == "/corpus"  # the run's own settings kept
        seen.append((method, tuple(sorted(asdict(ctx).items(), key=str))))
    assert len(set(seen)) == len(seen), "two variants of one sweep run alike"
