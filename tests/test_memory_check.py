"""The memory llama-server is checked against before it starts: the GGUF's weights, a KV cache
of the context for every slot (f16 K and V) and its runtime (no prompt cache in host memory:
`--cache-ram 0`); a refusal names the largest setting that fits. A user's GGUF is sized from
its header."""

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving import catalogue, llamacpp, server, slots
from activerag.serving.catalogue import (
    CATALOGUE,
    CPU_VLLM_MODEL,
    READER_MODEL,
    KvShape,
    check_fits,
    check_llama_fits,
    default_model,
    kv_cache_gb,
    largest_fit,
    llama_gb,
    memory_gb,
)
from activerag.serving.gguf_header import gguf_kv, gguf_metadata
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


def test_a_setting_that_takes_exactly_what_is_free_fits():
    need = 1.0 + 4 / 1024 + catalogue.LLAMA_RUNTIME_GB  # exact in binary
    check_llama_fits("m", 1.0, KIB_A_TOKEN, 1024, 4, free_gb=need)
    with pytest.raises(ActiveRagError, match="only 1.5 GB is available"):
        check_llama_fits("m", 1.0, KIB_A_TOKEN, 1024, 4, free_gb=need - 1 / 1024)


def test_llama_cpp_s_memory_is_the_model_s_context_on_one_slot_unless_told():
    assert memory_gb(QWEN_15B, "llama.cpp") == llama_gb(QWEN_15B.weights_gb, QWEN_15B.kv,
                                                         QWEN_15B.max_model_len, 1)
    assert memory_gb(QWEN_15B, "llama.cpp", 1024, 3) == llama_gb(QWEN_15B.weights_gb,
                                                                 QWEN_15B.kv, 1024, 3)
    assert memory_gb(QWEN_15B) == memory_gb(QWEN_15B, "vllm") == QWEN_15B.server_gb


@pytest.mark.parametrize(("engine", "gpu", "model"), [
    ("vllm", False, CPU_VLLM_MODEL),  # vLLM's CPU build decodes the 1.5B too slowly
    ("vllm", True, READER_MODEL),
    ("llama.cpp", False, READER_MODEL),
    ("llama.cpp", True, READER_MODEL),
])
def test_the_default_model_is_the_largest_its_engine_decodes_at_a_usable_speed(engine, gpu,
                                                                                model):
    assert default_model(engine, gpu) is model
    assert (CPU_VLLM_MODEL.key, READER_MODEL.key) == ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def test_vllm_s_check_is_its_measured_figure_still():
    check_fits(QWEN_15B, 32768, QWEN_15B.server_gb, "vllm")
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


def test_llama_server_is_checked_and_started_without_a_prompt_cache_in_host_memory(
        tmp_path: Path, monkeypatch):
    """A catalogue model is checked from the catalogue before its download; a user's GGUF from
    its size and header; either way with --cache-ram 0, which requests named to slots need
    (serving/slots.py), also under --no-prompt-cache."""
    monkeypatch.setattr(llamacpp, "ensure_binary", lambda settings: tmp_path / "llama-server")
    monkeypatch.setattr(server, "available_gb", lambda: 8.0)
    own = _tiny_gguf(tmp_path / "own.gguf")
    monkeypatch.setattr(server, "fetch_gguf", lambda folder, model: own)
    settings = Settings(home=tmp_path)
    launch = server.Launch("llama.cpp", parallel=5)
    cmd, _ = server._llama_launch(settings, None, 4096, None, QWEN_15B, launch)
    assert slots.cache_ram_off([c.encode() for c in cmd])
    cmd, _ = server._llama_launch(settings, own, 1024, None, QWEN_15B, launch)
    assert slots.cache_ram_off([c.encode() for c in cmd])
    cold = server.Launch("llama.cpp", parallel=5, prompt_cache=False)
    cmd, _ = server._llama_launch(settings, own, 1024, None, QWEN_15B, cold)
    assert slots.cache_ram_off([c.encode() for c in cmd]) and "--no-cache-prompt" in cmd
    monkeypatch.setattr(server, "available_gb", lambda: 0.4)
    with pytest.raises(ActiveRagError, match="own.gguf on llama.cpp at 1024 tokens x 5 slots"):
        server._llama_launch(settings, own, 1024, None, QWEN_15B, launch)


_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}


def _value(kind: int, value: object) -> bytes:
    """VALUE of GGUF type KIND as the file holds it; an array is (item type, items)."""
    if kind == 8:
        text = value if isinstance(value, bytes) else str(value).encode()
        return struct.pack("<Q", len(text)) + text
    if kind == 9:
        item, items = value  # type: ignore[misc]
        return struct.pack("<IQ", item, len(items)) + b"".join(_value(item, v) for v in items)
    return struct.pack("<" + _FORMATS[kind], value)


def _header(path: Path, *pairs: tuple[str | bytes, int, object], version: int = 3) -> Path:
    """A GGUF file that is its header alone, written by hand: KEY, TYPE, VALUE for each pair."""
    body = b"".join(_value(8, key) + struct.pack("<I", kind) + _value(kind, value)
                    for key, kind, value in pairs)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, 0, len(pairs)) + body)
    return path


def _llama(*pairs: tuple[str, int, object]) -> tuple[tuple[str, int, object], ...]:
    """A llama header of 3 layers, 8 heads and 500 wide, with PAIRS (llama.KEY) besides."""
    return (("general.architecture", 8, "llama"), ("llama.block_count", 4, 3),
            ("llama.attention.head_count", 4, 8), ("llama.embedding_length", 4, 500),
            *((f"llama.{key}", kind, value) for key, kind, value in pairs))


def test_the_head_size_is_the_key_or_value_length_or_the_width_over_the_heads(tmp_path: Path):
    assert gguf_kv(_header(tmp_path / "w.gguf", *_llama())) == KvShape(3, 8, 62)  # 500 // 8
    keys = _header(tmp_path / "k.gguf", *_llama(("attention.key_length", 4, 96)))
    assert gguf_kv(keys) == KvShape(3, 8, 96)
    values = _header(tmp_path / "v.gguf", *_llama(("attention.value_length", 4, 80)))
    assert gguf_kv(values) == KvShape(3, 8, 80)
    both = _header(tmp_path / "b.gguf", *_llama(("attention.key_length", 4, 96),
                                               ("attention.value_length", 4, 128)))
    assert gguf_kv(both) == KvShape(3, 8, 128)


def test_kv_heads_listed_per_layer_without_a_number_are_the_heads(tmp_path: Path):
    empty = _header(tmp_path / "e.gguf", *_llama(("attention.head_count_kv", 9, (4, []))))
    assert gguf_kv(empty) == KvShape(3, 8, 62)
    texts = _header(tmp_path / "t.gguf", *_llama(("attention.head_count_kv", 9, (8, ["2"]))))
    assert gguf_kv(texts) == KvShape(3, 8, 62)


def test_a_header_without_layers_or_heads_is_refused(tmp_path: Path):
    for pairs in ([("general.architecture", 8, "llama"), ("llama.block_count", 4, 3)],
                  [("general.architecture", 8, "llama"), ("llama.attention.head_count", 4, 8)]):
        with pytest.raises(ActiveRagError, match="KV cache cannot be sized; is it a language "
                                                 "model's GGUF\\?$"):
            gguf_kv(_header(tmp_path / "x.gguf", *pairs))


def test_the_header_is_read_whole_past_the_arrays_it_skips(tmp_path: Path):
    """Arrays up to 64 items are read; longer ones (a vocabulary) are skipped over, scalars by
    their size and strings one by one, and what follows them is read."""
    gguf = _header(tmp_path / "a.gguf", ("short", 9, (5, list(range(64)))),
                   ("long", 9, (5, list(range(65)))), ("after.ints", 4, 7),
                   ("words", 9, (8, [f"w{i}" for i in range(100)])), ("after.words", 8, "x"),
                   ("nested", 9, (9, [(4, [1, 2])] * 65)), ("last", 12, 0.25), version=2)
    assert gguf_metadata(gguf) == {"short": list(range(64)), "long": None, "after.ints": 7,
                                   "words": None, "after.words": "x", "nested": None,
                                   "last": 0.25}


def test_undecodable_text_in_a_header_is_read_with_replacement_characters(tmp_path: Path):
    gguf = _header(tmp_path / "t.gguf", (b"key\xff", 8, b"value\xfe"))
    assert gguf_metadata(gguf) == {"key\ufffd": "value\ufffd"}


def test_a_damaged_header_is_refused_with_what_is_wrong(tmp_path: Path):
    def refused(data: bytes, match: str) -> None:
        (tmp_path / "d.gguf").write_bytes(data)
        with pytest.raises(ActiveRagError, match=match):
            gguf_metadata(tmp_path / "d.gguf")

    start = b"GGUF" + struct.pack("<IQ", 3, 0)
    refused(start + struct.pack("<Q", 1), r"cut short or damaged \(the file ends inside it\); "
            "fetch the file again$")
    refused(start + struct.pack("<Q", 2 ** 63), "the file ends inside it")  # count, not -2**63
    refused(start + struct.pack("<Q", 1) + _value(8, "k") + struct.pack("<I", 2 ** 31 + 1),
            r"\(a value of unknown type 2147483649\)")
    refused(start + struct.pack("<Q", 1) + _value(8, "k") + struct.pack("<IIQ", 9, 2 ** 31, 1),
            r"\(a value of unknown type 2147483648\)")  # in an array
    refused(start + struct.pack("<Q", 1) + _value(8, "k") + struct.pack("<IIQ", 9, 5, 2 ** 63),
            "cut short or damaged")  # 2**63 int32s, not -2**63
    refused(start + struct.pack("<QQ", 1, 2 ** 63), "cut short or damaged")  # a key's length
    refused(start + struct.pack("<Q", 1) + _value(8, "k") + struct.pack("<IQ", 8, 2 ** 63),
            "cut short or damaged")  # a string value's length
    refused(b"GGUF" + struct.pack("<IQQ", 2 ** 31 + 2, 0, 0),
            "is GGUF version 2147483650; llama.cpp here reads versions 2 and 3$")
    refused(b"GGU", "does not begin with GGUF\\); llama.cpp serves .gguf model files$")
    with pytest.raises(ModelFileMissing, match="pass an existing .gguf file$"):
        gguf_metadata(tmp_path / "absent.gguf")


_SCALAR = st.one_of(
    st.tuples(st.just(4), st.integers(0, 2 ** 32 - 1)),
    st.tuples(st.just(5), st.integers(-(2 ** 31), 2 ** 31 - 1)),
    st.tuples(st.just(10), st.integers(0, 2 ** 64 - 1)),
    st.tuples(st.just(11), st.integers(-(2 ** 63), 2 ** 63 - 1)),
    st.tuples(st.just(7), st.booleans()),
    st.tuples(st.just(12), st.floats(allow_nan=False)),
    st.tuples(st.just(8), st.text(max_size=20)))


@given(st.dictionaries(st.text(max_size=12), st.one_of(
    _SCALAR, st.tuples(st.just(9), st.tuples(st.just(5), st.lists(
        st.integers(-(2 ** 31), 2 ** 31 - 1), max_size=80))))), st.sampled_from([2, 3]))
def test_any_header_reads_back_as_written(tmp_path_factory, meta, version):
    """Every key and value, in order; an array of more than 64 items as None."""
    path = _header(tmp_path_factory.mktemp("h") / "h.gguf",
                   *((key, kind, value) for key, (kind, value) in meta.items()),
                   version=version)
    expected = {key: (None if len(value[1]) > 64 else value[1]) if kind == 9 else value
                for key, (kind, value) in meta.items()}
    assert list(gguf_metadata(path).items()) == list(expected.items())
