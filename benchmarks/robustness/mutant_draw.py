"""What benchmarks/robustness/mutants.py draws from: every one-token mutant of the modules in
scope (a
compared or combined operator swapped, an int one up or a bool flipped, a `not` removed, a
keyword argument dropped, a value returned as None), each with the place and text it changes;
and a drawn mutant found again in a later tree when its code has moved."""

from __future__ import annotations

import ast
import functools
import subprocess
from dataclasses import dataclass

from benchmarks.robustness.breakages import ROOT

SCOPE = ("graphs", "nodes", "stores", "activerag/serving", "activerag/evaluation",
         "activerag/cli", "activerag/page")
PURE = ("logic.py", "documents.py", "metrics.py", "stats.py", "bm25_index.py")
"""File endings of the pure logic (a family folder's logic.py too), which `make mutation`
covers instead."""
SWAPS: dict[type, type] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
    ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And, ast.Add: ast.Sub, ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv}


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    operator: str
    before: str
    after: str
    start: tuple[int, int]
    end: tuple[int, int]

    @property
    def key(self) -> str:
        """One line: where, and the text before and after (whitespace runs as one space)."""
        return (f"{self.file}:{self.line}: {' '.join(self.before.split())} -> "
                f"{' '.join(self.after.split())}")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (never mutated)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    found.add(id(stmt.value))
    return found


def _annotations(tree: ast.AST) -> set[int]:
    """ids of every node inside a type annotation (X | None is no arithmetic) or an f-string
    (whose inner positions Python 3.11 does not give reliably)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        inside = [getattr(node, "annotation", None), getattr(node, "returns", None),
                  node if isinstance(node, ast.JoinedStr) else None]
        for ann in inside:
            if ann is not None:
                found.update(id(n) for n in ast.walk(ann))
    return found


def _variants(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(operator, mutated copy of NODE) for each one-token change of NODE."""
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAPS:
        out.append(("compare", ast.Compare(node.left, [SWAPS[type(node.ops[0])]()],
                                           node.comparators)))
    elif isinstance(node, ast.BoolOp):
        out.append(("boolean", ast.BoolOp(SWAPS[type(node.op)](), node.values)))
    elif isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
        out.append(("arithmetic", ast.BinOp(node.left, SWAPS[type(node.op)](), node.right)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("not", node.operand))
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        out.append(("constant", ast.Constant(not node.value)))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out.append(("constant", ast.Constant(node.value + 1)))
    elif isinstance(node, ast.Call) and node.keywords:
        for i, kw in enumerate(node.keywords):
            if kw.arg is not None:
                kept = node.keywords[:i] + node.keywords[i + 1:]
                out.append((f"drop {kw.arg}=", ast.Call(node.func, node.args, kept)))
    elif isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        out.append(("return None", ast.Return(ast.Constant(None))))
    return out


def mutants_of(rel: str) -> list[Mutant]:
    source = (ROOT / rel).read_text()
    tree = ast.parse(source)
    skip = _docstrings(tree) | _annotations(tree)
    out = []
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.expr | ast.stmt):
            continue
        before = ast.get_source_segment(source, node)
        if before is None:
            continue
        for operator, changed in _variants(node):
            after = ast.unparse(changed)
            if isinstance(node, ast.expr):
                after = f"({after})"
            out.append(Mutant(rel, node.lineno, operator, before, after,
                              (node.lineno, node.col_offset),
                              (node.end_lineno or node.lineno, node.end_col_offset or 0)))
    return out


def in_scope() -> list[str]:
    files = []
    for top in SCOPE:
        path = ROOT / top
        found = [path] if path.is_file() else sorted(path.rglob("*.py"))
        # a package's __init__ is skipped where it only names the package
        files += [str(p.relative_to(ROOT)) for p in found if not p.name.endswith(PURE)
                  and (p.name != "__init__.py" or len(p.read_text().splitlines()) > 12)]
    return files


def apply(source: str, m: Mutant) -> str:
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = source.encode()
    a = offsets[m.start[0] - 1] + m.start[1]
    b = offsets[m.end[0] - 1] + m.end[1]
    return (data[:a] + m.after.encode() + data[b:]).decode()


def _at(text: str, line: int, col: int, before: str) -> tuple[int, int] | None:
    """The (line, column) where BEFORE ends when it starts at LINE, COL (bytes) of TEXT."""
    lines = text.splitlines(keepends=True)
    if not 0 < line <= len(lines):
        return None
    start = sum(len(x) for x in lines[:line - 1]) + len(lines[line - 1].encode()[:col].decode(
        errors="ignore"))
    if text[start:start + len(before)] != before:
        return None
    end = start + len(before)
    return text.count("\n", 0, end) + 1, len(text[text.rfind("\n", 0, end) + 1:end].encode())


def relocated(sources: dict[str, str], m: Mutant, was: str | None) -> Mutant | None:
    """M where it stands in today's tree (SOURCES: each file in scope by its path). WAS is the
    text of M's first line where it was drawn: M stays where it is when that line is there
    unchanged; else it goes to a line of the same text (indentation aside) holding its code,
    in its own file nearest its old line, or the one such line in another file (the code was
    moved there); None when there is none. Without WAS only its own place counts."""
    here = sources.get(m.file, "").splitlines()
    if was is None or (m.line <= len(here) and here[m.line - 1] == was):
        return m if _at(sources.get(m.file, ""), *m.start, m.before) else None
    shift = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    found: list[tuple[str, int, int]] = []
    for file, text in sources.items():
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip() == was.strip():
                col = m.start[1] + len(line[:shift(line)].encode()) - len(was[:shift(was)].encode())
                if _at(text, i, col, m.before):
                    found.append((file, i, col))
    own = [f for f in found if f[0] == m.file]
    others = [f for f in found if f[0] != m.file]
    if own:
        file, line, col = min(own, key=lambda f: abs(f[1] - m.line))
    elif len(others) == 1:
        file, line, col = others[0]
    else:
        return None
    end = _at(sources[file], line, col, m.before)
    assert end is not None
    return Mutant(file, line, m.operator, m.before, m.after, (line, col), end)


@functools.cache
def _lines_at(rev: str, file: str) -> tuple[str, ...]:
    """FILE's lines at commit REV (none when it did not exist there), read once per file."""
    shown = subprocess.run(["git", "show", f"{rev}:{file}"], cwd=ROOT, capture_output=True,
                           text=True)
    return tuple(shown.stdout.splitlines()) if shown.returncode == 0 else ()


def first_lines(rev: str | None, m: Mutant) -> str | None:
    """The text of M's first line at REV, the commit its sample was drawn at (None: unknown)."""
    if rev is None:
        return None
    lines = _lines_at(rev, m.file)
    return lines[m.line - 1] if m.line <= len(lines) else None
