"""Stop strings on each engine (issue #38: the client-side stop was run by no unit test).
The client cuts the streamed text at the first stop string it sees, on both engines.
llama-server does not say which stop string ended a stream, so it is sent none and the client
closes the stream there. vLLM is sent them, and asked to keep them in the text: otherwise it
holds back a stop string's length of text at every token, and a sentence cut is seen about 2
tokens late (issue #37)."""

import asyncio

from activerag.serving.lm import VLLMClient
from activerag.testing.fake_lm import Backend, backend

REPLY = " Gepu is a town.\nQuestion: where is Kelmor?"


def generate(owned_by: str | None):
    b = Backend(reply=REPLY, owned_by=owned_by)
    with backend(b) as url:
        gen = asyncio.run(VLLMClient(url, "fake-model").generate(
            "Q: where is Gepu?\nA:", max_tokens=20, stop=["\n", "Question:"]))
    [body] = [body for path, body in b.requests if path == "/v1/completions"]
    return gen, body


def test_llama_server_s_stream_is_cut_at_the_first_stop_string_by_the_client():
    gen, body = generate("llamacpp")
    assert "stop" not in body
    assert gen.text == " Gepu is a town." and gen.stop_reason == "\n" and gen.finished
    assert "".join(t.text for t in gen.tokens) == gen.text


def test_vllm_is_sent_the_stop_strings_kept_in_its_text_and_the_client_cuts_them_off():
    gen, body = generate(None)
    assert body["stop"] == ["\n", "Question:"] and body["include_stop_str_in_output"] is True
    assert gen.text == " Gepu is a town." and gen.stop_reason == "\n" and gen.finished
