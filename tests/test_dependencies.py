"""What the package requires of the libraries that read users' files."""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _requirement(name: str) -> Requirement:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return next(r for r in map(Requirement, deps) if r.name == name)


def test_sentence_transformers_is_at_least_6():
    """Earlier versions trust module classes named in a local model folder's modules.json, and
    --query-encoder opens a folder a user hands over."""
    spec = _requirement("sentence-transformers").specifier
    assert "6.0.0" in spec and "5.7.0" not in spec and "3.4.1" not in spec
