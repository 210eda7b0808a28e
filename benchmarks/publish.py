"""Where a benchmark's Markdown result goes: the terminal, and the file under results/ it was
asked to write (its folder made if need be)."""

from __future__ import annotations

from pathlib import Path


def publish(text: str, out: str | Path) -> None:
    """Print TEXT and write it to OUT."""
    print("\n" + text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)
    print(f"written to {out}")
