"""The probe finds each ability present or absent on fake backends that each lack one, asks a
server once per process (and once a day with a file cache), and keeps its requests tiny."""

import json
import time

import pytest

from activerag.errors import LMServerUnreachable
from activerag.serving import probe as probing
from activerag.serving.probe import probe
from activerag.serving.probe_requests import PROMPT
from activerag.testing.fake_lm import Backend, backend

FULL = frozenset({"completions", "stream", "logprobs", "top_logprobs", "echo", "n", "token_ids",
                  "tokenize", "logit_bias", "chat"})


@pytest.fixture(autouse=True)
def _fresh():
    probing.forget()
    yield
    probing.forget()


def test_a_server_with_every_ability_shows_them_all():
    b = Backend()
    with backend(b) as url:
        found = probe(url)
    assert found.found == FULL
    assert (found.top_logprobs, found.context_length, found.model) == (20, 2048, "fake-model")
    assert found.why == {}


@pytest.mark.parametrize("ability", ["stream", "echo", "n", "token_ids", "tokenize",
                                     "logit_bias", "chat"])
def test_each_missing_ability_is_found_missing_and_only_it(ability):
    with backend(Backend({ability})) as url:
        found = probe(url)
    assert found.found == FULL - {ability}
    assert ability in found.why


@pytest.mark.parametrize(("lacks", "why"), [
    ("tokens", "/tokenize answered without tokens"), ("detokenize", "HTTP 404")])
def test_tokenize_needs_tokens_back_and_a_detokenize_that_answers(lacks, why):
    """Token-id prompts need both ends: /tokenize that gives ids, and /detokenize."""
    with backend(Backend({lacks})) as url:
        found = probe(url)
    assert "tokenize" not in found.found and not found.has("tokenize")
    assert why in found.why["tokenize"]


def test_the_server_s_refusal_is_kept_as_the_reason():
    with backend(Backend({"echo", "n"})) as url:
        found = probe(url)
    assert found.why["echo"] == "HTTP 400: echo is not supported"
    assert found.why["n"] == "HTTP 400: n > 1 is not supported"


@pytest.mark.parametrize("refuse", [False, True], ids=["ignored", "refused"])
def test_a_server_without_logprobs_has_none_of_what_needs_them(refuse):
    with backend(Backend({"logprobs"}, refuse_logprobs=refuse)) as url:
        found = probe(url)
    assert found.found == FULL - {"logprobs", "top_logprobs", "echo", "token_ids"}
    assert found.top_logprobs == 0 and not found.has("logprobs")
    assert ("HTTP 400: logprobs is not supported" if refuse else "carry none") in \
        found.why["logprobs"]


@pytest.mark.parametrize("cap", [5, 1])
def test_the_largest_top_logprobs_is_the_server_s_cap(cap):
    with backend(Backend(max_top=cap)) as url:
        found = probe(url)
    assert found.top_logprobs == cap and "logprobs" in found.found
    assert found.has(f"top_logprobs_{cap}") and not found.has("top_logprobs_20")
    assert f"max allowed: {cap}" in found.why["top_logprobs"]


def test_the_context_length_is_unknown_when_the_server_does_not_say():
    with backend(Backend({"context_length"})) as url:
        found = probe(url)
    assert found.context_length is None and found.found == FULL


def test_a_bias_the_server_ignores_is_not_logit_bias():
    b = Backend()
    b.honours_bias = False
    with backend(b) as url:
        found = probe(url)
    assert found.found == FULL - {"logit_bias"}
    assert found.why["logit_bias"] == "a +100 bias did not choose the token"


def test_no_server_is_a_clear_error(allow_port):
    allow_port(9)
    with pytest.raises(LMServerUnreachable, match="no OpenAI-compatible server answers at "
                                                  "http://127.0.0.1:9/v1"):
        probe("http://127.0.0.1:9/v1")


def test_the_probe_s_requests_are_tiny():
    b = Backend()
    with backend(b) as url:
        probe(url)
    completions = [body for path, body in b.requests if path.endswith("completions")]
    assert len(b.requests) <= 12
    assert all(body.get("max_tokens", 0) <= 2 for body in completions)
    assert all(body.get("prompt") in (PROMPT, b.ids(PROMPT)) or "messages" in body
               for body in completions)


def test_a_server_is_asked_once_per_process_unless_fresh():
    b = Backend()
    with backend(b) as url:
        first = probe(url)
        asked = len(b.requests)
        assert probe(url) is first and probe(url + "/") is first
        assert len(b.requests) == asked
        probe(url, fresh=True)
        assert len(b.requests) == 2 * asked


def test_the_file_cache_serves_another_process_for_a_day(tmp_path):
    cache = tmp_path / "probes.json"
    b = Backend(max_top=5)
    with backend(b) as url:
        probe(url, cache_file=cache)
        asked = len(b.requests)
        probing.forget()  # as a new process
        kept = probe(url, cache_file=cache)
        assert len(b.requests) == asked
        assert kept.top_logprobs == 5 and kept.found == FULL
        data = json.loads(cache.read_text())
        assert set(data) == {f"{url} ", f"{url} fake-model"}
        for entry in data.values():
            entry["probed_at"] = time.time() - probing.MAX_AGE_S - 1
        cache.write_text(json.dumps(data))
        probing.forget()
        probe(url, cache_file=cache)
        assert len(b.requests) == 2 * asked


def test_of_replicas_the_first_that_answers_is_probed(allow_port):
    allow_port(9)
    first, second = Backend(), Backend({"echo"})
    with backend(first) as one, backend(second) as two:
        assert probe(f"{one},{two}").url == one and not second.requests
        probing.forget()
        found = probe(f"http://127.0.0.1:9/v1,{two}")
    assert found.url == two and found.found == FULL - {"echo"}
    with pytest.raises(LMServerUnreachable, match="no replica answers"):
        probe("http://127.0.0.1:9/v1,http://127.0.0.1:9/v2")


def test_the_cached_probe_asks_about_the_model_given(own_home):
    from activerag.cli.abilities import probe_cached

    with backend(Backend()) as url:
        assert probe_cached(url, "asked-model").model == "asked-model"
        assert probe_cached(url, "").model == "fake-model"  # none given: the server's first
