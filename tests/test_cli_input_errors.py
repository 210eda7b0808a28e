"""Input a user can get wrong ends `activerag` with one clear line and exit code 2, before any
LM request and with no traceback (issue #19, item 9)."""

import pytest
from test_graph_routing import QUESTION, graph

from activerag import cli
from activerag.context import FlareContext
from activerag.graphs import registry
from activerag.testing.scripted import ScriptedLM, ends

NOWHERE = "http://127.0.0.1:9/v1"
"""A base URL nothing listens on: reaching the LM would say "unreachable"."""


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    """Every run reads an empty home of its own, whatever the environment names."""
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))
    for name in ("ACTIVERAG_STORE_DIR", "ACTIVERAG_PORT", "ACTIVERAG_LM_TIMEOUT",
                 "ACTIVERAG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one error line of `activerag ARGV`, which must exit 2 and print nothing else."""
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("activerag: error: "), err
    assert "unreachable" not in err and "Traceback" not in err
    return lines[0]


def ask(*options: str) -> list[str]:
    return ["ask", "--base-url", NOWHERE, *options, "Who was born in Kelmor?"]


@pytest.mark.parametrize(("options", "says"), [
    (["--theta", "nan"], "theta must be a finite number, got nan"),
    (["--theta", "2"], "theta must lie in [0, 1], got 2"),
    (["--k", "0"], "k must be at least 1, got 0"),
    (["--k", "-3"], "k must be at least 1, got -3"),
    (["--max-answer-tokens", "0"], "max_answer_tokens must be at least 1, got 0"),
])
def test_out_of_range_run_settings_are_refused(capsys, options, says):
    assert says in refused(capsys, ask(*options))


def test_a_port_that_is_not_a_number_is_refused(capsys, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_PORT", "abc")
    line = refused(capsys, ask())
    assert "ACTIVERAG_PORT" in line and "'abc'" in line


def test_a_port_outside_the_tcp_range_is_refused(capsys, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_PORT", "70000")
    assert "ACTIVERAG_PORT" in refused(capsys, ask())


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf"])
def test_an_lm_timeout_that_is_not_a_positive_number_is_refused(capsys, monkeypatch, value):
    monkeypatch.setenv("ACTIVERAG_LM_TIMEOUT", value)
    line = refused(capsys, ask())
    assert "ACTIVERAG_LM_TIMEOUT" in line and repr(value) in line


def test_a_binary_context_file_is_refused(capsys, tmp_path):
    binary = tmp_path / "context.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    line = refused(capsys, ask("--method", "long_context", "--context-file", str(binary)))
    assert str(binary) in line and "UTF-8" in line


def test_a_folder_as_context_file_is_refused(capsys, tmp_path):
    line = refused(capsys, ask("--method", "long_context", "--context-file", str(tmp_path)))
    assert str(tmp_path) in line and "folder" in line


def test_a_question_with_a_byte_that_is_not_utf8_is_refused(capsys):
    # what Python puts in sys.argv for the byte 0xe9 of a Latin-1 terminal
    line = refused(capsys, ["ask", "--base-url", NOWHERE, "Who was born in K\udce9lmor?"])
    assert "UTF-8" in line and "0xe9" in line


def test_an_html_page_into_a_missing_folder_is_refused_before_the_run(capsys, tmp_path,
                                                                      monkeypatch):
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.")])
    monkeypatch.setitem(registry.METHODS, "scripted", registry.Method(
        "scripted", graph(lm), FlareContext, {}, "FLARE", "FLARE over a scripted LM"))
    page = tmp_path / "missing" / "run.html"
    line = refused(capsys, ["ask", "--method", "scripted", "--html", str(page), QUESTION])
    assert str(page.parent) in line
    assert lm.calls == []


def test_an_html_page_onto_a_folder_is_refused(capsys, tmp_path):
    assert str(tmp_path) in refused(capsys, ask("--html", str(tmp_path)))


@pytest.mark.parametrize("question", ["", "   ", "\u200b\u200c\ufeff"])
def test_an_empty_question_is_refused_before_any_server_is_asked(capsys, question):
    line = refused(capsys, ["ask", "--base-url", NOWHERE, question])
    assert "the question is empty" in line and "does not answer" not in line
