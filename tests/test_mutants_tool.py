"""benchmarks/robustness/mutants.py finds a survivor again after its code moved (issue #38: a
rerun on
today's tree must neither count an unchanged mutant as lost nor mutate other code that happens
to read the same)."""

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tool():  # type: ignore[no-untyped-def]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the lab's benchmarks, a package beside the tests
    return importlib.import_module("benchmarks.robustness.mutants")


SOURCE = "def f(x):\n    return x + 1\n\n\ndef g(y):\n    ok = True\n    return y + 1\n"
WAS = "    return y + 1"


def test_a_mutant_in_place_stays_and_a_moved_one_is_found_by_its_line():
    m = tool()
    here = m.Mutant("a.py", 7, "arith", "y + 1", "(y - 1)", (7, 11), (7, 16))
    assert m.relocated({"a.py": SOURCE}, here, WAS) is here
    moved = m.relocated({"a.py": "# a new first line\n" + SOURCE}, here, WAS)
    assert (moved.file, moved.line, moved.start, moved.end) == ("a.py", 8, (8, 11), (8, 16))
    assert m.apply("# a new first line\n" + SOURCE, moved).endswith("return (y - 1)\n")
    nested = SOURCE.replace("    return y + 1", "    if y:\n        return y + 1")
    indented = m.relocated({"a.py": nested}, here, WAS)
    assert (indented.line, indented.start) == (8, (8, 15))


def test_a_constant_is_not_moved_to_another_constant_of_the_same_text():
    m = tool()
    one = m.Mutant("a.py", 2, "constant", "1", "(2)", (2, 15), (2, 16))
    shifted = m.relocated({"a.py": "\n\n" + SOURCE}, one, "    return x + 1")
    assert shifted.line == 4 and shifted.start == (4, 15)  # f's 1, not g's
    true = m.Mutant("a.py", 6, "constant", "True", "(False)", (6, 9), (6, 13))
    assert m.relocated({"a.py": SOURCE.replace("ok = True", "ok = bool(y)")}, true,
                       "    ok = True") is None


def test_code_moved_to_another_file_is_followed_there_when_it_is_the_only_place():
    m = tool()
    here = m.Mutant("a.py", 7, "arith", "y + 1", "(y - 1)", (7, 11), (7, 16))
    moved = m.relocated({"a.py": SOURCE.replace(WAS, "    return y"),
                         "b.py": "def g(y):\n    return y + 1\n"}, here, WAS)
    assert (moved.file, moved.line, moved.start) == ("b.py", 2, (2, 11))


def test_without_the_drawing_commit_only_its_own_place_counts():
    m = tool()
    here = m.Mutant("a.py", 7, "arith", "y + 1", "(y - 1)", (7, 11), (7, 16))
    assert m.relocated({"a.py": SOURCE}, here, None) is here
    assert m.relocated({"a.py": "\n" + SOURCE}, here, None) is None


def test_a_line_run_only_at_import_meets_the_whole_suite_when_its_files_tests_pass(monkeypatch):
    """What a module builds at import (the CLI's flags, a family's rows) is read by tests that
    call nothing in it: coverage names no test for such a line, so its file's tests can pass
    where the whole suite fails (seed 4's cli/flags.py:145)."""
    m = tool()
    calls: list[list[str]] = []

    def run(dest, tests, timeout):  # type: ignore[no-untyped-def]
        calls.append(tests)
        return "killed" if tests == ["tests"] else "survived"

    monkeypatch.setattr(m, "run", run)
    args = type("Args", (), {"tests": ["tests"], "timeout": 300.0})()
    assert m.verdict(Path("."), ["tests/test_a.py::t"], True, args) == "killed"
    assert calls == [["tests/test_a.py::t"], ["tests"]]
    calls.clear()
    assert m.verdict(Path("."), ["tests/test_a.py::t"], False, args) == "survived"
    assert calls == [["tests/test_a.py::t"]]
    calls.clear()
    assert m.verdict(Path("."), [], False, args) == "survived (no test runs it)" and calls == []
    assert m.verdict(Path("."), [], True, args) == "killed" and calls == [["tests"]]
    monkeypatch.setattr(m, "run", lambda dest, tests, timeout: "survived")
    assert m.verdict(Path("."), [], True, args) == "survived (whole suite)"


def test_a_tests_subprocesses_are_measured_under_that_tests_name(monkeypatch):
    """The coverage run's plugin rewrites the config coverage hands its subprocesses, so that a
    test running the CLI in a subprocess is chosen for the lines that process runs."""
    import base64
    import json
    import os
    from types import SimpleNamespace

    m = tool()
    given = base64.b64encode(json.dumps({"context": None, "source": ["activerag"]}).encode())
    monkeypatch.setenv("COVERAGE_PROCESS_CONFIG", given.decode())
    plugin: dict = {}
    exec(m.PLUGIN, plugin)
    item = SimpleNamespace(name="test_b[x-1]", module=SimpleNamespace(__name__="tests.test_a"))
    plugin["pytest_runtest_setup"](item)
    seen = json.loads(base64.b64decode(os.environ["COVERAGE_PROCESS_CONFIG"]))
    assert seen == {"context": "test_a.test_b", "source": ["activerag"]}
    assert m._node_id(seen["context"]) == "tests/test_a.py::test_b"
    plugin["pytest_runtest_teardown"](item)
    assert os.environ["COVERAGE_PROCESS_CONFIG"] == given.decode()


def test_a_line_run_at_import_is_marked_so_even_where_a_test_also_calls_it(tmp_path):
    """A graph compiled when its module loads is also compiled by the tests of its builder: its
    line keeps those tests and is marked as run at import, so that a survivor there meets the
    whole suite (seed 5's graphs/replug.py combine node without its retry policy)."""
    from coverage import CoverageData

    m = tool()
    source = "/copy/activerag/graphs/replug.py"
    data = CoverageData(basename=str(tmp_path / ".coverage"))
    data.set_context("")
    data.add_lines({source: [1, 3]})
    data.set_context("test_replug.test_builds")
    data.add_lines({source: [1, 2]})
    data.set_context("test_cli.test_ask")  # a subprocess a test started: its static context
    data.add_lines({source: [2]})
    data.write()
    tests, at_import = m.who_runs_what(tmp_path, 1, [], tmp_path / ".coverage")
    lines = tests["activerag/graphs/replug.py"]
    assert lines[1] == ["tests/test_replug.py::test_builds"]
    assert set(lines[2]) == {"tests/test_replug.py::test_builds", "tests/test_cli.py::test_ask"}
    assert set(lines[3]) == set(lines[2])  # run by no test function: its file's tests
    assert at_import == {"activerag/graphs/replug.py": {1, 3}}
