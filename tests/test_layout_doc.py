"""docs/layout.md is checked against the tree (issue #39): every module of the package is named
there, and every Python file it names exists, so the page cannot fall behind a move."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ("activerag", "graphs", "nodes", "stores")
LAB = ("benchmarks", "results", "tests")


def named() -> set[str]:
    return set(re.findall(r"\b([A-Za-z_0-9]+\.py)\b", (ROOT / "docs/layout.md").read_text()))


def modules() -> list[Path]:
    out = []
    for folder in PACKAGE:
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if path.name == "__init__.py" or (folder == "activerag" and rel.parts[1] in PACKAGE):
                continue
            out.append(rel)
    return sorted(out)


def family_wiring(path: Path) -> bool:
    """Whether PATH is a family folder's wiring, graphs/<family>.py beside
    nodes/<family>/methods.py: the page names that convention once (nodes/<family>/)."""
    return path.parts[0] == "graphs" and (ROOT / "nodes" / path.stem / "methods.py").exists()


def test_every_module_is_named_on_the_layout_page():
    missing = [str(p) for p in modules() if p.name not in named() and not family_wiring(p)]
    assert missing == [], f"docs/layout.md does not name {missing}: say where each belongs"


def test_every_file_the_layout_page_names_exists():
    present = {p.name for folder in PACKAGE + LAB for p in (ROOT / folder).rglob("*.py")}
    assert sorted(named() - present) == []
