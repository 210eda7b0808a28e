"""Every endpoint a method needs is asked for before its first LM request, and a down one is
named by the CLI flag that sets it; a flag the chosen method ignores is warned of (issue #19,
item 13b a)."""

from typing import ClassVar

import pytest

from activerag import cli
from activerag.errors import LMServerUnreachable
from activerag.testing.fake_lm import QuietHandler, serving

NOWHERE = "http://127.0.0.1:9/v1"
"""A base URL nothing listens on."""
QUESTION = "Who was born in Kelmor?"


class LightServer(QuietHandler):
    """A light sampler that lists its model and records every other request it gets."""

    work: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "light", "object": "model"}]})
            return
        self.work.append(f"GET {self.path}")
        self._json(404, {"error": {"message": "no route"}})

    def do_POST(self) -> None:
        self.work.append(f"POST {self.path}")
        self._json(404, {"error": {"message": "no route"}})


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch, allow_port):
    allow_port(9)  # NOWHERE: nothing listens there, so a connection is refused at once
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))
    for name in ("ACTIVERAG_STORE_DIR", "ACTIVERAG_PORT", "ACTIVERAG_BASE_URL",
                 "ACTIVERAG_STRONG_URL", "ACTIVERAG_LIGHT_URL"):
        monkeypatch.delenv(name, raising=False)
    LightServer.work.clear()


@pytest.fixture
def context_file(tmp_path):
    path = tmp_path / "context.txt"
    path.write_text(" ".join(f"Word{i} lives in Kelmor." for i in range(400)))
    return str(path)


def error_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("activerag: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_fb_rag_with_its_strong_reader_down_fails_before_the_light_stage(capsys, context_file):
    with serving(LightServer) as light:
        code = cli.main(["ask", "--method", "fb_rag", "--light-url", light, "--strong-url",
                         NOWHERE, "--context-file", context_file, QUESTION])
    assert code == 2
    line = error_line(capsys)
    assert "--strong-url" in line and NOWHERE in line and "set base_url" not in line
    assert LightServer.work == []


def test_fb_rag_with_its_light_sampler_down_names_light_url(capsys, context_file):
    assert cli.main(["ask", "--method", "fb_rag_fb", "--light-url", NOWHERE, "--strong-url",
                     NOWHERE, "--context-file", context_file, QUESTION]) == 2
    line = error_line(capsys)
    assert "--light-url" in line and "light sampler" in line


@pytest.mark.parametrize("method", ["flare", "replug", "none"])
def test_a_down_lm_is_named_by_base_url(capsys, method):
    assert cli.main(["ask", "--method", method, "--base-url", NOWHERE, QUESTION]) == 2
    line = error_line(capsys)
    assert "--base-url" in line and NOWHERE in line


def test_eval_checks_every_methods_endpoints_before_loading_anything(capsys, tmp_path):
    with serving(LightServer) as up:
        code = cli.main(["eval", "--methods", "flare,long_context", "--base-url", up,
                         "--strong-url", NOWHERE, "--light-url", up, "--n", "1",
                         "--run", str(tmp_path / "run")])
    assert code == 2
    assert "--strong-url" in error_line(capsys)
    assert LightServer.work == []
    assert not (tmp_path / "run").exists()


def test_base_url_with_an_fb_rag_method_is_warned_of(capsys, context_file):
    cli.main(["ask", "--method", "long_context", "--base-url", NOWHERE, "--strong-url", NOWHERE,
              "--context-file", context_file, QUESTION])
    _, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("activerag: warning: ")]
    assert len(warnings) == 1 and "--base-url" in warnings[0] and "--strong-url" in warnings[0]


def test_strong_url_with_flare_is_warned_of(capsys):
    cli.main(["ask", "--method", "flare", "--base-url", NOWHERE, "--strong-url", NOWHERE,
              QUESTION])
    _, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("activerag: warning: ")]
    assert len(warnings) == 1 and "--strong-url" in warnings[0] and "flare" in warnings[0]


async def test_a_reader_that_stops_answering_midway_is_named_by_its_flag():
    from activerag.nodes.fb_rag.steps import named

    async def down() -> None:
        raise LMServerUnreachable("the LM server at x is unreachable (refused); start it")

    with pytest.raises(LMServerUnreachable) as caught:
        await named(down(), "strong reader", NOWHERE)
    assert "--strong-url" in str(caught.value) and "`activerag serve`" in str(caught.value)
    with pytest.raises(LMServerUnreachable) as caught:
        await named(down(), "light sampler", NOWHERE)
    assert "--light-url" in str(caught.value) and "--model smollm2-135m" in str(caught.value)
