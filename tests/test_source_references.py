"""References inside the code stay true (issue #37 found three stale ones): every source file a
docstring, comment or doc names exists, and every breakage benchmarks/robustness/breakages.py
makes still
applies, once, to the file it names."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"(?<![\w/.])((?:activerag/|graphs/|nodes/|stores/|benchmarks/|results/)"
                   r"[\w/]*\w\.(?:py|md|sh))\b")
SOURCES = ("activerag", "graphs", "nodes", "stores", "benchmarks", "docs")
HISTORY = ("docs/testing.md",)
"""Records of past runs, which name files as they were then."""


def named_paths() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    files = [p for top in SOURCES for p in (ROOT / top).rglob("*")
             if p.suffix in (".py", ".md") and p.is_file()
             and str(p.relative_to(ROOT)) not in HISTORY] + [ROOT / "README.md"]
    for path in files:
        for name in NAMED.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_path_pattern_finds_what_a_reader_would_follow():
    text = "see graphs/app.py and nodes/flare_logic.py; not x/graphs/y.py or https://a/nodes/b.py"
    assert NAMED.findall(text) == ["graphs/app.py", "nodes/flare_logic.py"]


def test_every_source_file_the_code_and_docs_name_exists():
    missing = {name: where for name, where in named_paths().items()
               if not (ROOT / name).exists() and not (ROOT / name.replace(
                   "activerag/", "", 1)).exists()}
    assert not missing, f"named but absent: {missing}"


def test_every_breakage_still_applies_once_to_its_file():
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.robustness import breakages
    finally:
        sys.path.pop(0)
    counts = {b.name: (ROOT / b.file).read_text().count(b.old) if (ROOT / b.file).exists()
              else None for b in breakages.BREAKAGES}
    assert counts == {b.name: 1 for b in breakages.BREAKAGES}
