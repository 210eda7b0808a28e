"""What the golden-file tests share (tests/test_plot_facts.py, test_cli_surface.py,
test_dataclass_shapes.py): the JSON pinned under tests/golden/, rewritten on purpose with
ACTIVERAG_REWRITE_GOLDEN=1 (the diff of the file is then the change to review), and a test
module's function read in a process without the environment's ACTIVERAG_ settings (the
contexts' defaults, and the flags' help that states them, read those at import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).parent / "golden"
REWRITE = os.environ.get("ACTIVERAG_REWRITE_GOLDEN") == "1"


def pinned(name: str, now: Any, key: str | None = None) -> Any:
    """What tests/golden/NAME pins (its entry KEY when given; {} or None when nothing is),
    once NOW has been written there if a rewrite is asked for."""
    path = FOLDER / name
    whole = json.loads(path.read_text()) if path.exists() else {}
    if REWRITE:
        if key is None:
            whole = now
        else:
            whole[key] = now
        FOLDER.mkdir(exist_ok=True)
        path.write_text(json.dumps(whole, indent=1, sort_keys=True) + "\n")
    return whole if key is None else whole.get(key)


def in_clean_process(module: str, function: str) -> Any:
    """MODULE.FUNCTION() of a test module (JSON-able data) as a process with none of the
    environment's ACTIVERAG_ settings computes it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVERAG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", f"import json, {module} as t; "
                          f"print(json.dumps(t.{function}()))"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)
