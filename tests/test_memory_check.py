"""The memory llama-server is checked against before it starts: the GGUF's weights, a KV cache
of the context for every slot (f16 K and V), its runtime, and a prompt cache bounded by what is
left; a refusal names the largest setting that fits. A user's GGUF is sized from its header."""

import struct
from pathlib import Path

import pytest

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving import catalogue, llamacpp, server
from activerag.serving.catalogue import (
    CATALOGUE,
    GIB,
    KvShape,
    check_fits,
    kv_cache_gb,
    largest_fit,
    llama_gb,
    prompt_cache_mib,
)
from activerag.serving.gguf_header import gguf_kv
from activerag.settings import Settings

QWEN_15B = CATALOGUE["qwen2.5-coder-1.5b"]
KIB_A_TOKEN = KvShape(1, 1, 256)
"""1 KiB of f16 K and V a token."""


def test_each_catalogue_model_states_its_gguf_header_s_kv_shape():
    """Read from each GGUF's header (block_count, head_count_kv, key_length or
    embedding_length / head_count), not left at the conservative default."""
    assert {key: model.kv for key, model in CATALOGUE.items()} == {
        "qwen2.5-coder-0.5b": KvShape(24, 2, 64),
        "smollm2-135m": KvShape(30, 3, 64),
        "gemma-3-270m": KvShape(18, 1, 256),
        "qwen2.5-coder-1.5b": KvShape(28, 2, 128),
    }


def test_the_kv_cache_counts_k_and_v_in_f16_for_every_token_of_every_slot():
    assert QWEN_15B.kv.bytes_per_token == 28 * 2 * 128 * 2 * 2 == 28672
    assert QWEN_15B.kv.bytes_per_token * 32768 * 5 == 4_697_620_480  # 4.7e9 bytes
    assert kv_cache_gb(QWEN_15B.kv, 32768, 5) == 4.375
    assert kv_cache_gb(KIB_A_TOKEN, 1024, 4) == 4 / 1024
    assert llama_gb(1.0, KIB_A_TOKEN, 1024, 4) == 1.0 + 4 / 1024 + catalogue.LLAMA_RUNTIME_GB


def test_the_prompt_cache_gets_half_of_what_is_left_at_most_llama_server_s_default():
    assert prompt_cache_mib(free_gb=10.0, held_gb=2.0) == 4096
    assert prompt_cache_mib(free_gb=40.0, held_gb=2.0) == 8192
    assert prompt_cache_mib(free_gb=2.0, held_gb=3.0) == 0


def test_the_largest_setting_that_fits_is_the_longest_context_or_the_most_slots():
    # 2.5 GiB free, 1 GiB of weights, 0.5 runtime: 1 GiB for 1 KiB tokens, 1,048,576 of them
    assert largest_fit(1.0, KIB_A_TOKEN, 2.5, context=100_000, parallel=4) == (262_144, 10)
    assert largest_fit(1.0, KIB_A_TOKEN, 2.5, context=100_000, parallel=3) == (349_440, 10)
    assert largest_fit(1.0, KIB_A_TOKEN, 1.2, context=1024, parallel=1) == (0, 0)


def test_a_long_context_on_many_slots_is_refused_with_what_fits():
    """The 1.5B at 32k x 5 slots needs 4.4 GiB of KV cache beside 1.0 of weights: 5 GB is not
    enough, though the fixed figure used to say 1.6 GB."""
    with pytest.raises(ActiveRagError) as refused:
        check_fits(QWEN_15B, 32768, 5.0, "llama.cpp", parallel=5)
    message = str(refused.value)
    assert "\n" not in message
    assert "at 32768 tokens x 5 slots takes about 5.9 GB (1.0 weights, 4.4 KV cache" in message
    assert "only 5.0 GB is available" in message
    assert "--max-model-len 25856 at --parallel 5 or --parallel 3 at --max-model-len 32768" \
        in message
    with pytest.raises(ActiveRagError, match="largest that fits: none; serve a smaller model"):
        check_fits(QWEN_15B, 4096, 1.2, "llama.cpp", parallel=1)


def test_what_fits_returns_the_prompt_cache_left_to_it():
    held = 1117e6 / GIB + kv_cache_gb(QWEN_15B.kv, 4096, 5) + catalogue.LLAMA_RUNTIME_GB
    assert check_fits(QWEN_15B, 4096, 8.0, "llama.cpp", 5) == int((8.0 - held) * 512) == 3027
    assert check_fits(QWEN_15B, 4096, 100.0, "llama.cpp", 5) == catalogue.PROMPT_CACHE_MIB


def test_vllm_s_check_is_its_measured_figure_still():
    assert check_fits(QWEN_15B, 32768, QWEN_15B.server_gb, "vllm") == 0
    with pytest.raises(ActiveRagError, match="on vllm takes about 12.5 GB"):
        check_fits(QWEN_15B, 4096, 12.4, "vllm")


def _tiny_gguf(path: Path, arch: str = "qwen2", kv_heads: int | list[int] = 2,
               key_length: int | None = None) -> Path:
    """A GGUF written by the gguf package's own writer: 3 layers, 8 heads, 512 wide, a
    100-token vocabulary (an array long enough to be skipped), one small tensor."""
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(3)
    writer.add_head_count(8)
    writer.add_head_count_kv(kv_heads)
    writer.add_embedding_length(512)
    if key_length:
        writer.add_key_length(key_length)
        writer.add_value_length(key_length)
    writer.add_token_list([f"t{i}" for i in range(100)])
    writer.add_token_scores([0.0] * 100)
    writer.add_tensor("w", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_user_s_gguf_is_sized_from_its_header(tmp_path: Path):
    assert gguf_kv(_tiny_gguf(tmp_path / "a.gguf")) == KvShape(3, 2, 64)  # 512 / 8
    assert gguf_kv(_tiny_gguf(tmp_path / "b.gguf", "llama", 4, key_length=96)) == \
        KvShape(3, 4, 96)
    assert gguf_kv(_tiny_gguf(tmp_path / "c.gguf", kv_heads=[1, 4, 2])) == KvShape(3, 4, 64)


def test_a_file_that_is_no_whole_gguf_is_refused_clearly(tmp_path: Path):
    zipped = tmp_path / "model.gguf"
    zipped.write_bytes(b"PK\x03\x04" + bytes(60))
    with pytest.raises(ActiveRagError, match="is not a GGUF file"):
        gguf_kv(zipped)
    whole = _tiny_gguf(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:200])
    with pytest.raises(ActiveRagError, match="cut short or damaged"):
        gguf_kv(cut)
    old = tmp_path / "v1.gguf"
    old.write_bytes(b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
    with pytest.raises(ActiveRagError, match="GGUF version 1"):
        gguf_kv(old)
    with pytest.raises(ModelFileMissing, match="does not exist"):
        gguf_kv(tmp_path / "absent.gguf")
    headless = tmp_path / "no-layers.gguf"
    headless.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    with pytest.raises(ActiveRagError, match="KV cache cannot be sized"):
        gguf_kv(headless)


def test_llama_server_is_started_with_the_prompt_cache_that_is_left(tmp_path: Path,
                                                                    monkeypatch):
    """A catalogue model is checked from the catalogue before its download; a user's GGUF from
    its size and header; either way --cache-ram is what the check left."""
    monkeypatch.setattr(llamacpp, "ensure_binary", lambda settings: tmp_path / "llama-server")
    monkeypatch.setattr(server, "available_gb", lambda: 8.0)
    own = _tiny_gguf(tmp_path / "own.gguf")
    monkeypatch.setattr(server, "fetch_gguf", lambda folder, model: own)
    settings = Settings(home=tmp_path)
    launch = server.Launch("llama.cpp", parallel=5)
    cmd, _ = server._llama_launch(settings, None, 4096, None, QWEN_15B, launch)
    assert cmd[cmd.index("--cache-ram") + 1] == "3027"
    cmd, _ = server._llama_launch(settings, own, 1024, None, QWEN_15B, launch)
    held = own.stat().st_size / GIB + 3 * 2 * 64 * 4 * 1024 * 5 / GIB + 0.5
    assert cmd[cmd.index("--cache-ram") + 1] == str(int((8.0 - held) * 512))
    monkeypatch.setattr(server, "available_gb", lambda: 0.4)
    with pytest.raises(ActiveRagError, match="own.gguf on llama.cpp at 1024 tokens x 5 slots"):
        server._llama_launch(settings, own, 1024, None, QWEN_15B, launch)
