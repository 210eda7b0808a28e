import math

import pytest

from activerag.errors import NoLogprobs, PromptTooLong
from activerag.serving.generation import Token, _tokens_of, trim
from activerag.serving.lm_errors import too_long_error


def test_trim_cuts_text_and_drops_tokens_past_the_end():
    tokens = [Token("He", -0.1, 0), (t := Token(" left", -0.2, 2)), Token(".", -0.3, 7),
              Token(" She", -0.4, 8)]
    text, kept = trim("He left. She", tokens, 8)
    assert text == "He left."
    assert kept == tokens[:3]
    assert t.prob == pytest.approx(math.exp(-0.2))


def test_stream_chunk_offsets_come_from_the_server_not_the_lagging_text():
    # with a stop string the chunk's text lags its token: offsets still place it right
    info = {"logprobs": {"tokens": [" 6"], "token_logprobs": [-1.0], "text_offset": [4]},
            "finish_reason": None}
    assert [(t.text, t.start) for t in _tokens_of("", info, base=2, url="u")] == [(" 6", 4)]
    # without offsets, tokens are laid end to end from BASE
    info = {"logprobs": {"tokens": [" a", "b"], "token_logprobs": [-1.0, -2.0]},
            "finish_reason": None}
    assert [(t.text, t.start) for t in _tokens_of(" ab", info, 10, "u")] == [(" a", 10),
                                                                           ("b", 12)]


def test_text_without_logprobs_is_an_error_that_says_what_to_do():
    with pytest.raises(NoLogprobs, match="logprobs"):
        _tokens_of("word", {"logprobs": None, "finish_reason": None}, 0, "http://x/v1")


def test_final_empty_chunk_without_logprobs_is_fine():
    assert _tokens_of("", {"logprobs": None, "finish_reason": "stop"}, 5, "u") == []


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens",
    "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)",  # filled exactly
])
def test_a_prompt_that_leaves_no_room_is_too_long(message):
    assert isinstance(too_long_error("m", message), PromptTooLong)


def test_other_rejections_are_not_too_long():
    assert too_long_error("m", "temperature must be non-negative, got -1.0") is None


def test_a_prompt_past_a_llama_server_slot_says_how_slots_share_the_window():
    error = too_long_error("m", "request (5000 tokens) exceeds the available context size "
                                "(4096 tokens), try increasing it")
    assert isinstance(error, PromptTooLong) and "--parallel" in str(error)
    assert "slot" in str(error) and "--max-model-len" in str(error)


def test_llama_server_s_timings_are_read_and_anything_else_is_none():
    from activerag.serving.generation import ServerTimes

    got = ServerTimes.of({"cache_n": 5, "prompt_n": 7, "prompt_ms": 12.5, "predicted_n": 3,
                          "predicted_ms": 30.0, "predicted_per_second": 100.0})
    assert got == ServerTimes(cached=5, prefilled=7, prefill_ms=12.5, decoded=3, decode_ms=30.0)
    # no cache_n (an older server): nothing came from the cache
    assert ServerTimes.of({"prompt_n": 7, "prompt_ms": 1, "predicted_n": 0,
                           "predicted_ms": 0}) == ServerTimes(0, 7, 1.0, 0, 0.0)
    for bad in (None, [], "x", {}, {"prompt_n": "many", "prompt_ms": 1, "predicted_n": 1,
                                    "predicted_ms": 1}, {"prompt_n": 1, "prompt_ms": 1}):
        assert ServerTimes.of(bad) is None
