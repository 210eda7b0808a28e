"""docs/layout.md is checked against the tree by whole paths (issues #39, #58): every module of the
package and every lab script is named there in its own folder, and every Python file it names
exists, so the page cannot fall behind a move, and a file of one name in another folder (two
logic.py) cannot stand in for it.

The page's code block is a tree: a folder at the line's start ("nodes/"), or indented by two
("  flare/", inside the folder above), holds the bare file names of its lines until the next
folder; a name with a slash ("graphs/flare.py") is a path from the root. nodes/<family>/ names
the files a family folder may hold, once for all of them."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ("activerag", "graphs", "nodes", "stores")
LAB = ("benchmarks", "results")
FOLDER = re.compile(r"^( {0,2})([A-Za-z_<>]+(?:/[A-Za-z_<>]+)*/)(?=\s)")
FILE = re.compile(r"(?<![\w/.<>*-])((?:[\w<>*-]+/)*[\w<>*-]+\.py)\b")
FAMILY = "nodes/<family>/"


def named_paths(text: str) -> set[str]:
    """The paths from the root of the Python files the page's code block names."""
    top = inner = ""
    found = set()
    for line in text.split("```")[1].splitlines():
        if (folder := FOLDER.match(line)) is not None:
            top, inner = (top, folder[2]) if folder[1] else (folder[2], "")
            line = line[folder.end():]
        found.update(name if "/" in name else top + inner + name for name in FILE.findall(line))
    return found


def named() -> set[str]:
    return named_paths((ROOT / "docs/layout.md").read_text())


def modules() -> list[str]:
    out = []
    for folder in PACKAGE:
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if path.name == "__init__.py" or (folder == "activerag" and rel.parts[1] in PACKAGE):
                continue
            out.append(rel.as_posix())
    return sorted(out)


def lab_scripts() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for folder in LAB
                  for p in (ROOT / folder).rglob("*.py")
                  if p.name != "__init__.py" and "runs-15b" not in p.parts)


def covered(path: str, names: set[str]) -> bool:
    """Whether PATH is named: by its whole path; as a family folder's file (its name among
    nodes/<family>/'s); or as a family folder's wiring, graphs/<family>.py beside
    nodes/<family>/methods.py, which the page names once as a convention."""
    if path in names:
        return True
    parts = path.split("/")
    family = ROOT / "nodes" / Path(path).stem / "methods.py"
    if parts[0] == "graphs" and len(parts) == 2 and family.exists():
        return True
    return (parts[0] == "nodes" and len(parts) == 3
            and (ROOT / "nodes" / parts[1] / "methods.py").exists()
            and FAMILY + parts[2] in names)


def test_every_module_is_named_on_the_layout_page_in_its_folder():
    names = named()
    missing = [p for p in modules() if not covered(p, names)]
    assert missing == [], f"docs/layout.md does not name {missing}: say where each belongs"


def test_every_lab_script_is_named_in_its_folder():
    names = named()
    missing = [p for p in lab_scripts() if p not in names]
    assert missing == [], f"docs/layout.md does not name {missing}: say what each makes"


def test_every_file_the_layout_page_names_exists():
    absent = sorted(n for n in named() if "<" not in n and "*" not in n
                    and not (ROOT / n).exists())
    assert absent == []


def test_a_name_resolves_to_the_folder_it_is_listed_in():
    page = """```
nodes/       base.py (the base), loop.py
  flare/     steps.py, logic.py; its wiring graphs/flare.py
nodes/<family>/  context.py
results/     collect.py
```"""
    assert named_paths(page) == {"nodes/base.py", "nodes/loop.py", "nodes/flare/steps.py",
                                 "nodes/flare/logic.py", "graphs/flare.py",
                                 "nodes/<family>/context.py", "results/collect.py"}
    # a logic.py named only under page/ does not cover nodes/flare/logic.py
    assert not covered("nodes/flare/logic.py", {"activerag/page/logic.py"})
