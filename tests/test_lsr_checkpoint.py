"""The LSR trainer's checkpoint: its own round-trips through a weights-only load, and a crafted
one whose pickle would run code is refused before anything in it runs (issue #19)."""

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from activerag import lsr
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example


class _Chroma:
    """Just enough of a collection for the trainer to start: 20 passages of MiniLM's size."""

    def __len__(self) -> int:
        return 20

    def dimension(self) -> int:
        return 384


class _OneStep(lsr.Trainer):
    """A trainer whose loop takes one optimiser step and checkpoints, with no LM to ask."""

    started_at: int | None = None

    def _loop(self, model, optimiser, schedule, examples, step, losses, total, per_epoch, save,
              bar, stop_after):
        self.started_at = step
        loss = sum(p.sum() for p in model.parameters() if p.requires_grad) * 0.0 + 1.0
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        losses.append(float(loss.detach()))
        save(step + 1)
        self.model = model
        return step + 1, 0, 0


def _trainer(out: Path) -> _OneStep:
    corpus = SimpleNamespace(chroma=_Chroma(), path=out.parent)
    return _OneStep(corpus, SimpleNamespace(model="m"), out,
                    lsr.LSRConfig(k=2, batch=1, epochs=2, checkpoint_every=1), None,
                    progress=False)


EXAMPLES = [Example(id="q1", question="Who?", answers=["x"])]


def test_the_trainers_own_checkpoint_resumes_through_a_weights_only_load(tmp_path):
    first = _trainer(tmp_path / "enc")
    first.train(EXAMPLES, stop_after=1)
    saved = {k: v.clone() for k, v in first.model.state_dict().items()}
    again = _trainer(tmp_path / "enc")
    report = again.train(EXAMPLES, stop_after=2)
    assert report.resumed_from == 1 and again.started_at == 1
    state = torch.load(tmp_path / "enc" / "checkpoint.pt", weights_only=True)
    assert state["step"] == 2 and len(state["losses"]) == 2
    assert set(saved) <= set(state["model"])


class _RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_checkpoint_whose_pickle_would_run_code_is_refused_before_it_runs(tmp_path):
    out = tmp_path / "enc"
    out.mkdir()
    marker = tmp_path / "ran"
    torch.save({"config": _RunsCode(marker), "questions": ["q1"]}, out / "checkpoint.pt")
    with pytest.raises(ActiveRagError, match=r"checkpoint.pt.*not written by the trainer"):
        _trainer(out).train(EXAMPLES, stop_after=1)
    assert not marker.exists()
