"""Dependencies point one way, with no cycle: every module of the package, the root ones and
activerag/testing included, has a layer, and imports (lazy ones inside functions included)
only its own layer or lower; and the module import graph has no cycle at all."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"activerag": ROOT / "activerag", "activerag.graphs": ROOT / "graphs",
           "activerag.nodes": ROOT / "nodes", "activerag.stores": ROOT / "stores"}
"""Where each package's modules lie (graphs/, nodes/ and stores/ are installed in activerag)."""
LAYERS = {
    # leaves: errors, settings, names and data that every layer may use
    "activerag": 0, "activerag.errors": 0, "activerag.answers": 0, "activerag.state": 0,
    "activerag.sentences": 0, "activerag.locks": 0, "activerag.settings": 0,
    "activerag.demo": 0, "activerag.drawing": 0,
    "activerag.database": 0, "activerag.trigger_names": 0,
    # talking to LMs, holding documents, and the settings of a run
    "activerag.serving": 1, "activerag.stores": 1, "activerag.context": 1,
    "activerag.context_checks": 1,
    "activerag.method_record": 1,
    # what a graph's steps do; checkpoints; the run page's pure logic
    "activerag.nodes": 2, "activerag.durable": 2,
    "activerag.page.logic": 2, "activerag.page.record": 2,
    # wiring
    "activerag.graphs": 3,
    # on top: evaluation, the CLI, training, the run page, long contexts, test support
    "activerag.evaluation": 4, "activerag.cli": 4, "activerag.lsr": 4, "activerag.longctx": 4,
    "activerag.page": 4, "activerag.testing": 4,
}
"""Each module's layer, by the longest prefix of its name given here."""


def modules() -> dict[str, Path]:
    """Every module of the package by its import name."""
    found = {}
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if package == "activerag" and parts[0] in ("graphs", "nodes", "stores"):
                continue  # the installed packages' links, where a checkout has them
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def layer_of(module: str) -> int:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[prefix]


def imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules PATH imports anywhere in it (`from P import M` counts M)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(path, set(mods)) - {name} for name, path in mods.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
                  for a, targets in edges.items() for b in targets if layer_of(b) > layer_of(a))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def test_every_module_has_a_layer():
    assert all(any(m == p or m.startswith(p + ".") for p in LAYERS) for m in modules())
    assert {"activerag.context", "activerag.page.logic", "activerag.testing.processes",
            "activerag.nodes.triggers", "activerag.graphs.registry"} <= set(modules())


def test_no_module_imports_a_layer_above_its_own():
    assert upward(graph()) == []


def test_the_modules_import_each_other_without_a_cycle():
    assert cycles(graph()) == []


def test_the_checks_see_an_upward_import_and_a_cycle():
    edges = {"activerag.nodes.x": {"activerag.evaluation.metrics"},
             "activerag.evaluation.metrics": set(),
             "activerag.stores.a": {"activerag.stores.b"},
             "activerag.stores.b": {"activerag.stores.a"}}
    assert upward(edges) == ["activerag.nodes.x (layer 2) imports activerag.evaluation.metrics "
                             "(layer 4)"]
    assert cycles(edges) == [["activerag.stores.a", "activerag.stores.b"]]


def family_of(module: str) -> str | None:
    """The family folder MODULE lies in (activerag.nodes.<family>.<module>), or None."""
    parts = module.split(".")
    folder = ROOT / "nodes" / parts[2] if len(parts) > 3 and parts[1] == "nodes" else None
    return parts[2] if folder is not None and folder.is_dir() else None


def into_families(edges: dict[str, set[str]]) -> list[str]:
    """The imports of a family folder's module from outside every family and above the nodes'
    layer-2 code that wires families (graphs, the CLI, evaluation): a shared node module or a
    lower layer that reached into one family would tie the others to it."""
    return sorted(f"{a} imports {b}" for a, targets in edges.items() for b in targets
                  if family_of(b) and not family_of(a) and layer_of(a) <= layer_of(b))


def test_no_shared_module_imports_a_family_folder():
    assert into_families(graph()) == []
    assert into_families({"activerag.nodes.triggers": {"activerag.nodes.gated.logic"},
                          "activerag.graphs.gated": {"activerag.nodes.gated.logic"}}) == [
        "activerag.nodes.triggers imports activerag.nodes.gated.logic"]
