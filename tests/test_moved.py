"""No silent re-exports (issue #58): a package module imports a name from another of ours only to
use it. Names that moved keep their old path for a while through activerag.moved, which says
where each lives now with a DeprecationWarning."""

import ast
import importlib
import importlib.util
import re
import warnings
from pathlib import Path

import pytest

from activerag.moved import moved_names

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"activerag": ROOT / "activerag", "activerag.graphs": ROOT / "graphs",
           "activerag.nodes": ROOT / "nodes", "activerag.stores": ROOT / "stores"}


def package_files() -> list[Path]:
    out = []
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder)
            if package == "activerag" and rel.parts[0] in ("graphs", "nodes", "stores"):
                continue
            out.append(path)
    return out


def unused_imports(source: str) -> list[str]:
    """The names SOURCE imports at its top level from activerag's modules (not a module itself:
    those are imported to register what they hold) and never names again: re-exports."""
    found = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and node.module.startswith("activerag")):
            continue
        for alias in node.names:
            name = alias.asname or alias.name
            if is_submodule(node.module, alias.name):
                continue
            if len(re.findall(rf"\b{re.escape(name)}\b", source)) < 2:
                found.append(f"{node.module}.{alias.name}")
    return found


def is_submodule(package: str, name: str) -> bool:
    """Whether PACKAGE.NAME is a module (PACKAGE a package), not a name PACKAGE holds."""
    spec = importlib.util.find_spec(package)
    return (spec is not None and spec.submodule_search_locations is not None
            and importlib.util.find_spec(f"{package}.{name}") is not None)


def test_no_package_module_imports_a_name_it_does_not_use():
    found = {str(p.relative_to(ROOT)): names for p in package_files()
             if (names := unused_imports(p.read_text()))}
    assert found == {}, "re-exported without use: import each name from where it lives"


def test_the_check_finds_a_re_export_and_passes_a_used_name():
    assert unused_imports("from activerag.serving.lm_errors import busy_error\n") == [
        "activerag.serving.lm_errors.busy_error"]
    assert unused_imports("from activerag.serving.lm_errors import busy_error\n"
                          "x = busy_error\n") == []
    assert unused_imports("from activerag.nodes.gated import triggers\n") == []  # registers


OLD_PATHS = [
    ("activerag.page", "record_run", "activerag.page.record"),
    ("activerag.serving.probe", "ABILITIES", "activerag.serving.probe_requests"),
    ("activerag.serving.lm", "busy_error", "activerag.serving.lm_errors"),
    ("activerag.serving.server", "convert_gguf", "activerag.serving.models"),
    ("activerag.durable", "STATE_TYPES", "activerag.durable.checkpoints"),
    ("activerag.nodes.flare", "begin", "activerag.nodes.loop"),
    ("activerag.nodes.flare", "make_draft", "activerag.nodes.flare.steps"),
    ("activerag.nodes.flare", "shots", "activerag.nodes.exemplars"),
]


@pytest.mark.parametrize(("old", "name", "home"), OLD_PATHS)
def test_an_old_path_gives_the_name_and_says_where_it_lives(old, name, home):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)}\.{name} has moved: import "
                                                 rf"it from {re.escape(home)}"):
        got = getattr(module, name)
    assert got is getattr(importlib.import_module(home), name)


def test_every_moved_name_lives_where_its_old_module_says():
    for path in package_files():
        source = path.read_text()
        if "\n__getattr__ = moved_names(__name__" not in source:
            continue
        call = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                    and getattr(n.func, "id", "") == "moved_names")
        homes = ast.literal_eval(call.args[1])
        for name, home in homes.items():
            assert hasattr(importlib.import_module(home), name), (path, name, home)


def test_a_name_that_never_lived_there_is_an_attribute_error_without_a_warning():
    look = moved_names("m", {"a": "activerag.errors"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="module 'm' has no attribute 'b'"):
            look("b")
