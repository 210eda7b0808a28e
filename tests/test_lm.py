import math

import pytest

from activerag.errors import NoLogprobs
from activerag.lm import Token, _tokens_of, trim


def test_trim_cuts_text_and_drops_tokens_past_the_end():
    tokens = [Token("He", -0.1, 0), (t := Token(" left", -0.2, 2)), Token(".", -0.3, 7),
              Token(" She", -0.4, 8)]
    text, kept = trim("He left. She", tokens, 8)
    assert text == "He left."
    assert kept == tokens[:3]
    assert t.prob == pytest.approx(math.exp(-0.2))


def test_stream_chunk_offsets_are_relative_to_the_whole_generation():
    info = {"logprobs": {"tokens": [" a", "b"], "token_logprobs": [-1.0, -2.0],
                         "text_offset": [40, 42]}, "finish_reason": None}
    toks = _tokens_of(" ab", info, base=10, url="u")
    assert [(t.text, t.start) for t in toks] == [(" a", 10), ("b", 12)]


def test_text_without_logprobs_is_an_error_that_says_what_to_do():
    with pytest.raises(NoLogprobs, match="logprobs"):
        _tokens_of("word", {"logprobs": None, "finish_reason": None}, 0, "http://x/v1")


def test_final_empty_chunk_without_logprobs_is_fine():
    assert _tokens_of("", {"logprobs": None, "finish_reason": "stop"}, 5, "u") == []
