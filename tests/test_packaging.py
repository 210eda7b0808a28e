"""A wheel holds every package of the source tree: pyproject lists its packages by hand
(graphs/, nodes/ and stores/ are installed inside activerag), so a folder added without a line
there would work in the editable checkout and reach a wheel only as data files, which
setuptools does today with a deprecation warning ("Installing 'activerag.nodes.replug' as
data is deprecated") and says it will stop doing: every family folder of nodes/ was."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_folder_with_an_init_is_a_listed_package():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    where = tool["package-dir"]
    found = set()
    for package, folder in where.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            inner = ".".join((package, *parts))
            # a link activerag/graphs -> graphs, where a checkout has one, is not the source
            if not any(inner == p or inner.startswith(p + ".") for p in where
                       if where[p] != folder and p.startswith(package + ".")):
                found.add(inner)
    assert found == set(tool["packages"])
