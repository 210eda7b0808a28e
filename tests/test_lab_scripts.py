"""The lab's scripts (benchmarks/ and results/) are the package's users: each imports, and uses
only public names of activerag, so that a rename inside the package fails here instead of
breaking a script nobody runs until the next study (issue #39). The breakage cases' sources
are tests/test_source_references.py's."""

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*(p for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py"),
                  *(ROOT / "results").glob("*.py")])


def private_uses(source: str) -> list[str]:
    """Private names of activerag that SOURCE imports or reaches through an imported name."""
    tree = ast.parse(source)
    bound: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("activerag"):
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                if alias.name.startswith("_"):
                    found.append(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names
                         if a.name.startswith("activerag"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in bound and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_lab_script_imports(script, monkeypatch):
    if script.parts[len(ROOT.parts)] == "benchmarks":  # a package, run with python -m
        monkeypatch.syspath_prepend(str(ROOT))
        importlib.import_module(".".join(script.relative_to(ROOT).with_suffix("").parts))
        return
    monkeypatch.syspath_prepend(str(script.parent))
    spec = importlib.util.spec_from_file_location(f"lab_{script.parent.name}_{script.stem}",
                                                  script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)


def test_the_lab_scripts_use_only_public_names():
    used = {str(p.relative_to(ROOT)): private_uses(p.read_text()) for p in SCRIPTS}
    assert {k: v for k, v in used.items() if v} == {}


def test_a_lab_script_does_its_work_only_when_run():
    """Importing a script (this test, a notebook) must not write results: its work is under
    `if __name__ == "__main__"`, or it is a module of helpers with nothing to run."""
    idle = []
    for script in SCRIPTS:
        tree = ast.parse(script.read_text())
        effects = [n for n in tree.body if isinstance(n, ast.For | ast.If | ast.While | ast.With)
                   and not (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))
                   or isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                   and not ast.unparse(n.value).startswith("os.environ.")]  # settings, not work
        if effects:
            idle.append(f"{script.relative_to(ROOT)}:{effects[0].lineno}")
    assert idle == []


def test_the_check_sees_a_private_name():
    assert private_uses("from activerag.evaluation.sweeps import _error_bars\n") == [
        "activerag.evaluation.sweeps._error_bars"]
    assert private_uses("from activerag.serving import server\nserver._pid_file(s)\n") == [
        "server._pid_file"]
    assert private_uses("class A:\n    def f(self):\n        self._x = 1\n") == []
