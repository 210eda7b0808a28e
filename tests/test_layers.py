"""Dependencies point one way: stores and serving below nodes, nodes below graphs, evaluation
and the CLI on top. Read from every module's imports (lazy ones inside functions included)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# layer of each package folder, by its import name; a module may import its own layer or lower
LAYERS = {
    "activerag.stores": 1, "activerag.serving": 1,
    "activerag.nodes": 2,
    "activerag.graphs": 3,
    "activerag.evaluation": 4, "activerag.cli": 4, "activerag.lsr": 4,
}
FOLDERS = {"activerag.stores": ROOT / "stores", "activerag.serving": ROOT / "activerag/serving",
           "activerag.nodes": ROOT / "nodes", "activerag.graphs": ROOT / "graphs",
           "activerag.evaluation": ROOT / "activerag/evaluation",
           "activerag.cli": ROOT / "activerag/cli", "activerag.lsr": ROOT / "activerag/lsr"}
# run-time leaves every layer may use
LEAVES = ("activerag.answers", "activerag.context", "activerag.context_after_flare",
          "activerag.errors", "activerag.settings", "activerag.state", "activerag.sentences",
          "activerag.locks")


def layer_of(module: str) -> int | None:
    return next((n for prefix, n in LAYERS.items()
                 if module == prefix or module.startswith(prefix + ".")), None)


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def upward_imports() -> list[str]:
    wrong = []
    for package, folder in FOLDERS.items():
        for path in sorted(folder.glob("*.py")):
            for module in imports(path):
                target = layer_of(module)
                if target is not None and target > LAYERS[package]:
                    wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    return wrong


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports() == []


# the one exception, lazy: FlareContext and GateContext refuse an unknown trigger or estimator
# name, and the names are those registered with nodes/triggers.py (a user's own too)
ALLOWED = {("activerag.context", "activerag.nodes.triggers"),
           ("activerag.context_after_flare", "activerag.nodes.triggers")}


def test_the_leaves_import_no_layer_but_serving():
    for leaf in LEAVES:
        path = ROOT / (leaf.replace(".", "/") + ".py")
        above = [m for m in imports(path) if (layer_of(m) or 0) > 1
                 and not any((leaf, a) in ALLOWED and m.startswith(a) for _, a in ALLOWED)]
        assert above == [], f"{leaf} imports {above}"


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    bad = tmp_path / "nodes"
    bad.mkdir()
    (bad / "x.py").write_text("def f():\n    from activerag.evaluation.metrics import qa_f1\n")
    monkeypatch.setitem(FOLDERS, "activerag.nodes", bad)
    monkeypatch.setattr("test_layers.ROOT", tmp_path)
    assert sorted(upward_imports()) == [
        "nodes/x.py imports activerag.evaluation.metrics",
        "nodes/x.py imports activerag.evaluation.metrics.qa_f1"]
