"""The documentation says what the code does: its commands parse, its links lead somewhere, its
Python snippets compile and import what exists, and the README stays a front door.

No servers and no network: commands are only parsed (`activerag.cli.parser`), never run."""

from __future__ import annotations

import importlib
import re
import shlex
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
COMMAND_PAGES = [README, *DOCS]
LINK_PAGES = [README, *DOCS, ROOT / "results" / "README.md",
              *sorted((ROOT / "results" / "studies").glob("*.md"))]
RESULTS_INDEX_MAX_LINES = 80
"""results/README.md is an index of the studies (two pages at most); each study has its page."""
README_MAX_LINES = 250

FENCE = re.compile(r"^(`{3,}|~{3,})([^\n`]*)\n(.*?)^\1[ \t]*$", re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced code block."""
    return [(m.group(2).strip(), m.group(3)) for m in FENCE.finditer(text)]


def without_code(text: str) -> str:
    """TEXT without fenced blocks and inline code spans, whose brackets are not links."""
    text = FENCE.sub("", text)
    return re.sub(r"(`+).*?\1", "", text, flags=re.S)


def commands(text: str) -> list[str]:
    """Every `activerag ...` command in TEXT's fenced blocks: backslash continuations joined,
    an optional "$ " prompt and leading VAR=value assignments dropped, `&&` chains split."""
    found = []
    for _, body in fenced_blocks(text):
        logical, pending = [], ""
        for line in body.splitlines():
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            logical.append(pending + line)
            pending = ""
        if pending:
            logical.append(pending)
        for line in logical:
            line = line.strip()
            if line.startswith("$ "):
                line = line[2:]
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue  # not shell (a trace, a diagram)
            while words and ASSIGNMENT.match(words[0]):
                words.pop(0)
            chain: list[list[str]] = [[]]
            for word in words:
                if word in ("&&", "||", ";"):
                    chain.append([])
                else:
                    chain[-1].append(word)
            found += [shlex.join(c) for c in chain if c and c[0] == "activerag"]
    return found


def parse_error(command: str) -> str | None:
    """What argparse says about COMMAND, or None when it parses."""
    import contextlib
    import io

    from activerag.cli import parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser().parse_args(shlex.split(command)[1:])
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "exit"
    return None


def test_every_documented_command_parses_with_the_cli_parser():
    """Every fenced `activerag ...` line of the README and docs/ parses as written. No line is
    skipped: placeholders (FILE, STORE, "...", $ACTIVERAG_DATA/...) are ordinary arguments."""
    documented = {page: commands(page.read_text()) for page in COMMAND_PAGES}
    assert len(documented[README]) >= 5, "the README's commands were not found"
    assert sum(map(len, documented.values())) >= 15, "too few commands found to trust the scan"
    wrong = [f"{_rel(page)}: {cmd}\n    {err}" for page, cmds in documented.items()
             for cmd in cmds if (err := parse_error(cmd)) is not None]
    assert not wrong, "commands the CLI refuses:\n" + "\n".join(wrong)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = unicodedata.normalize("NFC", text.lower())
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of the Markdown file PATH (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(FENCE.sub("", path.read_text())):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """The relative links of PAGE whose file, or whose heading in a Markdown file, is missing."""
    broken = []
    for target in LINK.findall(without_code(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue  # http(s), mailto: not a file of the repository
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{_rel(page)}: {target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{_rel(page)}: {target} (no such heading in {file.name})")
    return broken


def test_every_relative_link_points_to_a_file_that_exists():
    pages = [p for p in LINK_PAGES if p.exists()]
    assert README in pages and len(DOCS) >= 7, "the docs pages are missing"
    assert sum(len(LINK.findall(without_code(p.read_text()))) for p in pages) >= 20
    broken = [b for page in pages for b in broken_links(page)]
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door():
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines; keep it at most {README_MAX_LINES} and move detail "
        "into docs/ or results/README.md")


def test_the_results_readme_is_an_index_of_study_pages():
    index = ROOT / "results" / "README.md"
    lines = index.read_text().count("\n")
    assert lines <= RESULTS_INDEX_MAX_LINES, (
        f"results/README.md has {lines} lines; keep it an index and give the study its page "
        "under results/studies/")
    linked = set(re.findall(r"\(studies/([\w-]+\.md)\)", index.read_text()))
    pages = {p.name for p in (ROOT / "results" / "studies").glob("*.md")}
    assert pages and pages == linked, f"study pages the index does not list: {pages - linked}"


def python_blocks() -> list[tuple[Path, str]]:
    return [(page, body) for page in COMMAND_PAGES
            for info, body in fenced_blocks(page.read_text()) if info == "python"]


def test_python_snippets_compile_and_import_what_exists():
    """Each snippet compiles (top-level await allowed, as in a notebook), and every name it
    imports from activerag exists, so a rename that leaves a snippet behind is caught."""
    import ast

    blocks = python_blocks()
    assert len(blocks) >= 5
    missing = []
    for page, body in blocks:
        tree = compile(body, _rel(page), "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("activerag"):
                try:
                    module = importlib.import_module(node.module)
                except ImportError as exc:
                    missing.append(f"{_rel(page)}: {node.module} ({exc})")
                    continue
                missing += [f"{_rel(page)}: {node.module}.{a.name}" for a in node.names
                            if not hasattr(module, a.name)]
    assert not missing, "snippets import what does not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize("text, expected", [
    ("```bash\nactiverag ask --trace \"q\"   # a comment\n```\n", ["activerag ask --trace q"]),
    ("```\n$ activerag eval --n 3 \\\n    --run runs/x\n```\n",
     ["activerag eval --n 3 --run runs/x"]),
    ("```\nactiverag serve && activerag serve --model m\n```\n",
     ["activerag serve", "activerag serve --model m"]),
    ("```\nA=1 B=2 activerag ingest --demo\n```\n", ["activerag ingest --demo"]),
    ("`activerag nonsense` in prose\n```python\nx = 'activerag'\n```\n", []),
])
def test_the_command_scan_finds_what_a_reader_would_run(text, expected):
    assert commands(text) == expected


def test_the_checks_refuse_what_they_should():
    assert parse_error("activerag eval --out runs/demo.json") is not None  # --run is the flag
    assert parse_error("activerag eval --run runs/demo") is None
    assert slug("Results on the default model (Qwen2.5-Coder-0.5B-Instruct)") == \
        "results-on-the-default-model-qwen25-coder-05b-instruct"
    assert slug("REPLUG-LSR: a retriever trained by the LM") == \
        "replug-lsr-a-retriever-trained-by-the-lm"


FIRST_SCREEN = 40
"""Lines a newcomer sees before scrolling (issue #58)."""


def test_the_readme_s_first_screen_says_what_it_is_the_two_commands_and_where_to_read_on():
    screen = README.read_text().splitlines()[:FIRST_SCREEN]
    text = "\n".join(screen)
    for part in ("# activerag", "## The two commands", "make demo", "make test",
                 "## What the demo prints", "## Where to read on", "results/README.md"):
        assert part in text, f"the README's first {FIRST_SCREEN} lines lack {part!r}"
    assert screen[-1] == "" or text.rstrip().endswith(")."), "the screen ends mid-section"
    long = [n for n, line in enumerate(screen, 1) if len(line) > 100]
    assert not long, f"lines of over 100 characters on the first screen: {long}"


def test_each_study_row_of_the_results_index_is_short():
    index = (ROOT / "results" / "README.md").read_text().splitlines()
    rows = [line for line in index if line.startswith("| [")]
    assert len(rows) >= 10
    long = [row[:60] for row in rows if len(row) > 200]
    assert not long, f"index rows over 200 characters: {long}"
