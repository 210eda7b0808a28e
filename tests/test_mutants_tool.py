"""benchmarks/mutants.py finds a survivor again after the code moved within its file (issue
#38: a rerun on today's tree must not count an unchanged mutant as lost)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tool():  # type: ignore[no-untyped-def]
    path = ROOT / "benchmarks" / "mutants.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # its helpers beside it
    spec = importlib.util.spec_from_file_location("lab_mutants_tool", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SOURCE = "def f(x):\n    return x + 1\n\n\ndef g(y):\n    return y + 1\n"


def test_a_mutant_in_place_stays_and_a_moved_one_is_found_nearest_its_old_line():
    m = tool()
    here = m.Mutant("a.py", 6, "arith", "y + 1", "(y - 1)", (6, 11), (6, 16))
    assert m.relocated(SOURCE, here) is here
    moved = m.relocated("# a new first line\n" + SOURCE, here)
    assert (moved.line, moved.start, moved.end) == (7, (7, 11), (7, 16))
    assert m.apply("# a new first line\n" + SOURCE, moved).endswith("return (y - 1)\n")
    near_f = m.Mutant("a.py", 2, "constant", "1", "(2)", (2, 15), (2, 16))
    shifted = m.relocated("\n\n" + SOURCE, near_f)
    assert shifted.line == 4 and shifted.start == (4, 15)  # f's 1, not g's


def test_a_mutant_whose_code_is_gone_is_not_found():
    m = tool()
    gone = m.Mutant("a.py", 2, "arith", "x * 2", "(x / 2)", (2, 11), (2, 16))
    assert m.relocated(SOURCE, gone) is None
