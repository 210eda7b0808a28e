"""The LSR trainer's checkpoint: written by the trainer, read back through a weights-only load
(a checkpoint whose pickle names anything but tensors and plain values is refused before
anything in it runs), resumed only with the settings and questions it was written with; and the
trained encoder saved with what it was trained on."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError
from activerag.lsr.objective import LSRConfig


def load_checkpoint(path: Path) -> dict[str, Any]:
    """PATH's tensors and plain values, refused whole if its pickle names anything else (which
    a full unpickling would import and call)."""
    import pickle

    import torch

    try:
        state = torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError):
        raise ActiveRagError(
            f"{path} holds more than tensors and plain values, so it was not written by the "
            "trainer (or it is damaged), and it is not loaded; delete it to start afresh, or "
            "use another --out") from None
    if not isinstance(state, dict) or not {"config", "questions", "step"} <= state.keys():
        raise ActiveRagError(f"{path} is not a checkpoint of the trainer; delete it to start "
                             "afresh, or use another --out")
    return state


def resume(path: Path, cfg: LSRConfig, ids: list[str], model: Any, optimiser: Any,
           schedule: Any) -> tuple[int, list[float]]:
    """Load the checkpoint at PATH into MODEL, OPTIMISER, SCHEDULE and torch's random state:
    its step and losses. Refused when it was written with other settings or questions."""
    import torch

    state = load_checkpoint(path)
    written = {**asdict(LSRConfig()), **state["config"]}  # settings added since
    if written != asdict(cfg) or state["questions"] != ids:
        raise ActiveRagError(
            f"{path} was written with other settings or questions; use the same ones to "
            "resume, or another --out (or delete it) to start afresh")
    model.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimiser"])
    schedule.load_state_dict(state["schedule"])
    torch.set_rng_state(state["rng"])
    return state["step"], state["losses"]


def saver(path: Path, cfg: LSRConfig, ids: list[str], model: Any, optimiser: Any,
          schedule: Any, losses: list[float]) -> Any:
    """A function of the step that writes the checkpoint at PATH whole (through a temporary
    file, so an interrupted write leaves the last one)."""
    import torch

    def save(step: int) -> None:
        torch.save({"model": model.state_dict(), "optimiser": optimiser.state_dict(),
                    "schedule": schedule.state_dict(), "step": step, "losses": losses,
                    "config": asdict(cfg), "questions": ids, "rng": torch.get_rng_state()},
                   path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)

    return save


def save_encoder(model: Any, out: Path, meta: dict[str, Any]) -> None:
    """The trained query tower in OUT, with lsr.json saying how it was trained."""
    model.save(str(out))
    (out / "lsr.json").write_text(json.dumps(meta, indent=1))
