"""Every ACTIVERAG_ variable a command reads takes effect, and a bad value is refused by name.

The variables are the ones the code names (checked against the CLI's ENVIRONMENT list, so a
new one fails here until it is tested). `serve` is run through the CLI down to the point where
it would start the engine: subprocess.Popen is stood in by one that records the command line
and environment and stops there, so nothing starts and nothing is fetched. Defaults that the
contexts read when their module is imported are read in a fresh interpreter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import types
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from activerag.cli import main
from activerag.cli.options import ENVIRONMENT
from activerag.context import FlareContext
from activerag.errors import ActiveRagError, LMServerUnreachable, SettingError
from activerag.serving import llamacpp, managed, server
from activerag.serving.catalogue import CATALOGUE
from activerag.serving.lm import VLLMClient
from activerag.serving.lm_errors import LMServerError
from activerag.serving.token_lm import VLLMTokens
from activerag.settings import Settings, lm_timeout, shared_data
from activerag.stores.corpus import Corpus
from activerag.testing.fake_lm import Backend, backend, serving

ROOT = Path(__file__).resolve().parents[1]
VARIABLES = {v for names in ENVIRONMENT for v in names.split(", ")}
KEY_VARIABLE = {"vllm": "VLLM_API_KEY", "llama.cpp": "LLAMA_API_KEY"}
"""Where each engine reads its API key."""
ENGINES = tuple(KEY_VARIABLE)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ACTIVERAG_ variable from the environment (nor an engine's key); HOME under TMP_PATH."""
    for name in [*VARIABLES, *KEY_VARIABLE.values()]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))


def test_every_variable_the_code_reads_is_listed_and_tested_here():
    named = set()
    for folder in ("activerag", "nodes", "graphs", "stores"):
        for path in (ROOT / folder).rglob("*.py"):
            named |= set(re.findall(r"ACTIVERAG_[A-Z][A-Z_]*", path.read_text()))
    named |= {f"ACTIVERAG_{field.upper()}" for field in Settings.model_fields}
    assert named == VARIABLES, "list each in cli/options.py ENVIRONMENT and test it here"
    tested = {name for name in VARIABLES
              if any(name.removeprefix("ACTIVERAG_").lower() in test for test in globals()
                     if test.startswith("test_"))}
    assert tested == VARIABLES, f"no test_... named after {sorted(VARIABLES - tested)}"


# --- serve: the engine's command line and environment ------------------------------------------

class Started(Exception):
    """The engine's process would have started now, with this command line and environment."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        super().__init__("Popen reached")
        self.cmd, self.env = cmd, env


def popen(cmd: list[str], env: dict[str, str], **kwargs: Any) -> None:
    raise Started(cmd, env)


def no_server(*args: Any, **kwargs: Any) -> list[str]:
    raise LMServerUnreachable("nothing answers yet")


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """What serve needs besides a process, stood in: no server answers and no port is taken;
    vLLM is an empty module, llama-server and the model files are empty files, and every model
    fits this machine."""
    made = {"binary": tmp_path / "llama-server", "gguf": tmp_path / "model.gguf",
            "model_dir": tmp_path / "hf-model"}
    made["binary"].write_text("")
    made["gguf"].write_text("")
    made["model_dir"].mkdir()
    monkeypatch.setattr(server, "server_models", no_server)
    monkeypatch.setattr(server, "listening", lambda host, port: False)
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(server, "check_model_dir", lambda path: path)
    monkeypatch.setattr(server, "gpu_visible", lambda: False, raising=False)
    monkeypatch.setattr(server, "_has_gpu", lambda: False, raising=False)
    fits = lambda *args, **kwargs: None  # noqa: E731 (fits)
    monkeypatch.setattr(server, "check_fits", fits)
    monkeypatch.setattr(llamacpp, "check_gguf_fits", fits, raising=False)
    monkeypatch.setattr(server, "fetch_gguf", lambda folder, model: made["gguf"])
    monkeypatch.setattr(llamacpp, "ensure_binary", lambda settings: made["binary"])
    monkeypatch.setattr(server, "subprocess", types.SimpleNamespace(
        Popen=popen, STDOUT=subprocess.STDOUT))
    return made


def serve_args(engine: str, files: dict[str, Path], *extra: str) -> list[str]:
    model = ["--gguf", str(files["gguf"])] if engine == "llama.cpp" else \
        ["--model-dir", str(files["model_dir"])]
    return ["serve", "--engine", engine, *model, *extra]


def started(args: list[str]) -> Started:
    with pytest.raises(Started) as caught:
        main(args)
    return caught.value


def flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


@pytest.mark.parametrize("engine", ENGINES)
def test_host_port_and_home_place_the_server(engine, files, monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVERAG_HOST", "127.0.0.2")
    monkeypatch.setenv("ACTIVERAG_PORT", "9123")
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "elsewhere"))
    cmd = started(serve_args(engine, files)).cmd
    assert (flag(cmd, "--host"), flag(cmd, "--port")) == ("127.0.0.2", "9123")
    log = "llama-9123.log" if engine == "llama.cpp" else "vllm-9123.log"
    assert {p.name for p in (tmp_path / "elsewhere").iterdir()} == {log, "vllm-9123.lock"}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_api_key_reaches_each_engine_s_environment_and_not_its_command_line(
        engine, files, monkeypatch):
    """The key of a server bound where others reach it: vLLM reads VLLM_API_KEY, llama-server
    LLAMA_API_KEY (and only that one: given vLLM's alone it served everyone)."""
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret")
    monkeypatch.setenv("ACTIVERAG_HOST", "0.0.0.0")
    launch = started(serve_args(engine, files))
    assert launch.env[KEY_VARIABLE[engine]] == "s3cret"
    assert flag(launch.cmd, "--host") == "0.0.0.0"
    assert not any("s3cret" in part for part in launch.cmd)


@pytest.mark.parametrize("engine", ENGINES)
def test_without_an_api_key_no_engine_is_given_one(engine, files):
    env = started(serve_args(engine, files)).env
    assert not set(KEY_VARIABLE.values()) & set(env)


@pytest.mark.parametrize("key", [None, "", "   "])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_host_others_reach_without_an_api_key_is_refused(engine, key, files, monkeypatch,
                                                           capsys):
    monkeypatch.setenv("ACTIVERAG_HOST", "0.0.0.0")
    if key is not None:
        monkeypatch.setenv("ACTIVERAG_API_KEY", key)  # blank: no key
    assert main(serve_args(engine, files)) == 2
    err = capsys.readouterr().err
    assert "'0.0.0.0' with no API key" in err and "set ACTIVERAG_API_KEY" in err


@pytest.mark.parametrize("value", ["abc", "0", "70000", "-1", "80.5"])
def test_a_bad_port_is_refused_by_name(value, files, monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_PORT", value)
    assert main(serve_args("llama.cpp", files)) == 2
    assert f"ACTIVERAG_PORT={value!r} is not valid" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bad_host_setting_is_refused_before_anything_starts(engine, files, monkeypatch,
                                                              capsys):
    monkeypatch.setenv("ACTIVERAG_HOST", "10.0.0.7")  # an interface others reach, no key
    assert main(serve_args(engine, files)) == 2
    assert "'10.0.0.7' with no API key" in capsys.readouterr().err


def test_port_wins_over_a_catalogue_model_s_own_port(files, monkeypatch):
    key = "smollm2-135m"
    args = ["serve", "--engine", "llama.cpp", "--model", key]
    assert flag(started(args).cmd, "--port") == str(CATALOGUE[key].port)
    monkeypatch.setenv("ACTIVERAG_PORT", "9124")
    assert flag(started(args).cmd, "--port") == "9124"


def test_serve_stop_stops_the_port_s_server_only(monkeypatch):
    stopped: list[int] = []
    monkeypatch.setattr(managed, "managed_ports", lambda settings: [8001, 8002])
    monkeypatch.setattr(managed, "stop_server",
                        lambda settings: stopped.append(settings.port) or True)
    assert main(["serve", "--stop"]) == 0 and stopped == [8001, 8002]
    stopped.clear()
    monkeypatch.setenv("ACTIVERAG_PORT", "9125")
    assert main(["serve", "--stop"]) == 0 and stopped == [9125]


def test_home_holds_the_models_stores_and_the_llama_server_build(monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "h"))
    settings = Settings.from_env()
    assert (settings.home, settings.models, settings.stores) == (
        tmp_path / "h", tmp_path / "h" / "models", tmp_path / "h" / "store")
    assert llamacpp.build_dir(settings).parent == tmp_path / "h" / "llama.cpp"


def test_a_blank_home_is_the_default_home(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_HOME", "")
    assert Settings.from_env().home == Path.home() / ".cache" / "activerag"


def test_a_home_that_is_a_file_is_refused_by_name(files, monkeypatch, tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "a-file"))
    assert main(serve_args("llama.cpp", files)) == 2
    assert "ACTIVERAG_HOME" in capsys.readouterr().err


# --- the LM clients -------------------------------------------------------------------------

class _Slow(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        time.sleep(1.0)
        self.send_response(200)
        self.end_headers()


async def test_lm_timeout_bounds_every_request(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_LM_TIMEOUT", "0.25")
    assert lm_timeout() == 0.25
    with serving(_Slow) as url:
        client, tokens = VLLMClient(url, "m"), VLLMTokens(url, "m")
        assert client.timeout == tokens.timeout == 0.25
        with pytest.raises(LMServerError, match="within 0.25 s.*ACTIVERAG_LM_TIMEOUT"):
            await tokens.post("/tokenize", {"prompt": "a"})


@pytest.mark.parametrize("value", ["abc", "0", "-3", "inf", "nan", ""])
def test_a_bad_lm_timeout_is_refused_by_name(value, files, monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_LM_TIMEOUT", value)
    if not value:  # blank: a number is still needed
        with pytest.raises(SettingError, match="ACTIVERAG_LM_TIMEOUT=''"):
            lm_timeout()
        return
    assert main(serve_args("llama.cpp", files)) == 2
    assert f"ACTIVERAG_LM_TIMEOUT={value!r} is not a positive number" in capsys.readouterr().err


def test_lm_reconnect_sets_how_long_a_run_waits(monkeypatch):
    from activerag.serving.replicas import reconnect_seconds

    assert reconnect_seconds() == 120.0
    monkeypatch.setenv("ACTIVERAG_LM_RECONNECT", "7.5")
    assert reconnect_seconds() == 7.5


@pytest.mark.parametrize("value", ["abc", "-5"])
def test_a_bad_lm_reconnect_is_refused_by_name(value, monkeypatch):
    from activerag.serving.replicas import reconnect_seconds

    monkeypatch.setenv("ACTIVERAG_LM_RECONNECT", value)
    with pytest.raises(SettingError, match="ACTIVERAG_LM_RECONNECT"):
        reconnect_seconds()


PASSAGES = [("Alpha Beta", "Alpha Beta was born in Gepu."), ("Kelmor", "Kelmor is a city."),
            ("Vedria", "The Vedria is a river."), ("Delta", "Delta Gamma sings.")]


def ingested(folder: Path) -> Path:
    source = folder.with_suffix(".jsonl")
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in PASSAGES))
    Corpus(folder).ingest(source, dense=False, progress=False)
    return folder


def test_base_url_model_and_store_dir_are_what_ask_uses(monkeypatch, tmp_path, capsys):
    b = Backend(reply=" Alpha Beta was born in Gepu. So the answer is Gepu.")
    monkeypatch.setenv("ACTIVERAG_STORE_DIR", str(ingested(tmp_path / "store")))
    monkeypatch.setenv("ACTIVERAG_MODEL", "fake-model")
    with backend(b) as url:
        monkeypatch.setenv("ACTIVERAG_BASE_URL", url)
        assert main(["ask", "--method", "single", "--prompt-format", "chatml",
                     "Where was Alpha Beta born?"]) == 0
    prompts = [body for path, body in b.requests if path == "/v1/completions"
               and "Where was Alpha Beta born?" in str(body["prompt"])]
    assert prompts and all(body["model"] == "fake-model" for body in prompts)
    assert "[1] Alpha Beta: Alpha Beta was born in Gepu." in prompts[-1]["prompt"]
    assert "So the answer is Gepu." in capsys.readouterr().out


def test_a_base_url_that_is_no_url_is_refused_naming_its_flag(monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_BASE_URL", "localhost:8000/v1")
    assert main(["ask", "--method", "single", "Where was Alpha Beta born?"]) == 2
    err = capsys.readouterr().err
    assert "at localhost:8000/v1 does not answer" in err and "--base-url" in err


def test_host_and_port_are_the_default_base_url(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_HOST", "127.0.0.3")
    monkeypatch.setenv("ACTIVERAG_PORT", "9126")
    assert Settings.from_env().url == "http://127.0.0.3:9126/v1"
    monkeypatch.setenv("ACTIVERAG_BASE_URL", "http://127.0.0.9:1/v1")
    assert Settings.from_env().url == "http://127.0.0.9:1/v1"


def fresh(env: dict[str, str], code: str) -> str:
    """What CODE prints in a fresh interpreter with ENV (the import-time defaults)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVERAG_")}
    done = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_base_url_model_store_dir_strong_url_and_light_url_are_the_contexts_defaults():
    code = ("from activerag.context import FlareContext as F\n"
            "from activerag.nodes.fb_rag.context import FBRagContext as B\n"
            "f, b = F(), B()\n"
            "print(f.base_url, f.model, f.store_dir, b.base_url, b.light_base_url)")
    env = {"ACTIVERAG_BASE_URL": "http://127.0.0.9:1/v1", "ACTIVERAG_MODEL": "m1",
           "ACTIVERAG_STORE_DIR": "/tmp/s1", "ACTIVERAG_STRONG_URL": "http://127.0.0.9:2/v1",
           "ACTIVERAG_LIGHT_URL": "http://127.0.0.9:3/v1"}
    assert fresh(env, code).split() == [
        "http://127.0.0.9:1/v1", "m1", "/tmp/s1", "http://127.0.0.9:2/v1", "http://127.0.0.9:3/v1"]
    del env["ACTIVERAG_STRONG_URL"]  # the strong reader then is the base URL's
    assert fresh(env, code).split()[3] == "http://127.0.0.9:1/v1"


# --- the deployment's limits --------------------------------------------------------------------

def test_allowed_base_urls_limit_every_endpoint_a_run_names(monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_ALLOWED_BASE_URLS", "http://127.0.0.1:8000/v1, "
                                                      "http://10.0.0.2:9000")
    FlareContext(base_url="http://127.0.0.1:8000/v1")
    FlareContext(base_url="http://10.0.0.2:9000/v1")
    for outside in ("http://127.0.0.1:8001/v1", "http://127.0.0.1:8000@evil/v1",
                    "https://127.0.0.1:8000/v1"):
        with pytest.raises(SettingError, match="not under an endpoint ACTIVERAG_ALLOWED_BASE_URLS"):
            FlareContext(base_url=outside)
    monkeypatch.setenv("ACTIVERAG_BASE_URL", "http://127.0.0.1:8001/v1")
    assert main(["ask", "--method", "single", "Where?"]) == 2
    assert "ACTIVERAG_ALLOWED_BASE_URLS" in capsys.readouterr().err


def test_a_malformed_allowed_base_url_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_ALLOWED_BASE_URLS", "127.0.0.1:8000")
    with pytest.raises(SettingError, match="ACTIVERAG_ALLOWED_BASE_URLS holds '127.0.0.1:8000'"):
        FlareContext(base_url="http://127.0.0.1:8000/v1")


def test_store_root_limits_every_store_a_run_names(monkeypatch, tmp_path):
    (tmp_path / "root" / "mine").mkdir(parents=True)
    monkeypatch.setenv("ACTIVERAG_STORE_ROOT", str(tmp_path / "root"))
    FlareContext(store_dir=str(tmp_path / "root" / "mine"))
    for outside in (tmp_path / "other", tmp_path / "root" / ".." / "other"):
        with pytest.raises(SettingError, match="lies outside ACTIVERAG_STORE_ROOT"):
            FlareContext(store_dir=str(outside))


# --- data, stores and the shared evaluation -------------------------------------------------------

def test_data_is_where_the_paper_s_exemplars_are_read(monkeypatch, tmp_path):
    from activerag.nodes.exemplars import task_for
    from activerag.nodes.prompts import EXEMPLARS_FILE, paper_task

    (tmp_path / EXEMPLARS_FILE).parent.mkdir(parents=True)
    (tmp_path / EXEMPLARS_FILE).write_text(json.dumps({"WikiMultiHopQA.cot_examplars": [
        {"question": "Where is Gepu?", "cot": "Gepu is on the Vedria.", "answer": "Vedria"}]}))
    monkeypatch.setenv("ACTIVERAG_DATA", str(tmp_path))
    paper_task.cache_clear()
    try:
        assert shared_data() == tmp_path
        [shot] = task_for(FlareContext(prompt_set="paper")).exemplars
        assert shot[:2] == ("Where is Gepu?", "Gepu is on the Vedria. So the answer is Vedria.")
    finally:
        paper_task.cache_clear()


def test_a_data_folder_that_is_not_one_is_refused_by_name(monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVERAG_DATA", str(tmp_path / "missing"))
    with pytest.raises(ActiveRagError, match="ACTIVERAG_DATA=.*missing is not a folder"):
        shared_data()


def test_chroma_url_is_the_store_ingest_writes_to(monkeypatch, tmp_path):
    import activerag.stores.corpus

    given: list[Any] = []

    class Recorded:
        def __init__(self, path: Path, chroma_url: str | None = None) -> None:
            given.append((path, chroma_url))

        def ingest(self, *args: Any, **kwargs: Any) -> Any:
            return types.SimpleNamespace(summary=lambda: "ingested")

    monkeypatch.setattr(activerag.stores.corpus, "Corpus", Recorded)
    monkeypatch.setenv("ACTIVERAG_CHROMA_URL", "https://chroma.example:9000")
    monkeypatch.setenv("ACTIVERAG_STORE_DIR", str(tmp_path / "s"))
    (tmp_path / "c.jsonl").write_text("")
    assert main(["ingest", str(tmp_path / "c.jsonl")]) == 0
    assert given == [(tmp_path / "s", "https://chroma.example:9000")]


def chroma_client(monkeypatch: pytest.MonkeyPatch, url: str) -> dict[str, Any]:
    import chromadb

    from activerag.stores import chroma

    seen: dict[str, Any] = {}
    monkeypatch.setattr(chromadb, "HttpClient", lambda **kwargs: seen.update(kwargs))
    chroma._client(None, url)
    return seen


def test_chroma_url_s_host_port_and_scheme_are_the_client_s(monkeypatch):
    seen = chroma_client(monkeypatch, "https://chroma.example:9000")
    assert (seen["host"], seen["port"], seen["ssl"]) == ("chroma.example", 9000, True)


def test_a_chroma_url_without_a_scheme_is_refused_or_read_as_host_and_port(monkeypatch):
    try:
        seen = chroma_client(monkeypatch, "chroma.example:9000")
    except ActiveRagError as exc:
        assert "ACTIVERAG_CHROMA_URL" in str(exc) or "chroma" in str(exc)
        return
    assert (seen["host"], seen["port"]) == ("chroma.example", 9000)


def test_database_url_is_read_and_a_malformed_one_refused_by_name(monkeypatch):
    from activerag.database import DatabaseError, database_url

    assert database_url() is None
    monkeypatch.setenv("ACTIVERAG_DATABASE_URL", "postgresql://u@db.example:5432/runs")
    assert database_url() == "postgresql://u@db.example:5432/runs"
    for bad in ("mysql://db.example/runs", "db.example:5432"):
        monkeypatch.setenv("ACTIVERAG_DATABASE_URL", bad)
        with pytest.raises(DatabaseError, match="ACTIVERAG_DATABASE_URL=.* is not a PostgreSQL"):
            database_url()
