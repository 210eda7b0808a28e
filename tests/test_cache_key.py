"""The LM cache key: one request, one key; any change that can change the generation, a new key."""

import hashlib

import pytest
from nltk.tokenize.punkt import PunktParameters

from activerag.nodes.loop import AnswerCut
from activerag.sentences import SentenceSplitter
from activerag.serving.cache import CachedLM
from activerag.serving.generation import Generation


class NamedLM:
    """Just enough of an LM for CachedLM to be built: a model name, and the alternatives per
    token it asks for when given."""

    def __init__(self, model: str = "m", top_logprobs: int | None = None) -> None:
        self.model = model
        if top_logprobs is not None:
            self.top_logprobs = top_logprobs


class Splitter:
    """A sentence splitter reduced to its fingerprint and a cut method."""

    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint

    def first_sentence_end(self, text: str, final: bool = False) -> int | None:
        return None


REQUEST = {"max_tokens": 8, "stop": ["\n\n"], "logit_bias": {7: -100.0}}


def key(tmp_path, prompt="p", model="m", **changes):
    lm = CachedLM(NamedLM(model), tmp_path / f"{model}.sqlite")
    params = {**REQUEST, "cut": Splitter("abc123").first_sentence_end, **changes}
    return lm._key(prompt, **params)


def test_the_key_is_the_hash_of_the_sorted_request(tmp_path):
    # a stable format keeps the caches written by earlier runs valid, until the stored
    # Generation changes meaning and CACHE_FORMAT says so
    blob = (b'{"cut": "abc123", "format": 2, "logit_bias": {"7": -100.0}, "max_tokens": 8, '
            b'"model": "m", "prompt": "p", "stop": ["\\n\\n"]}')
    assert key(tmp_path) == hashlib.sha256(blob).hexdigest()


def test_the_order_of_the_arguments_does_not_matter(tmp_path):
    lm = CachedLM(NamedLM(), tmp_path / "c.sqlite")
    cut = Splitter("abc123").first_sentence_end
    assert lm._key("p", max_tokens=8, stop=None, logit_bias=None, cut=cut) == lm._key(
        "p", cut=cut, logit_bias=None, stop=None, max_tokens=8)


@pytest.mark.parametrize("change", [
    {"prompt": "p "},
    {"model": "m2"},
    {"max_tokens": 9},
    {"stop": ["\n"]},
    {"stop": None},
    {"logit_bias": {7: 100.0}},
    {"logit_bias": None},
    {"cut": Splitter("abc124").first_sentence_end},
    {"cut": None},
])
def test_any_change_to_the_request_changes_the_key(tmp_path, change):
    assert key(tmp_path, **change) != key(tmp_path)


def test_a_splitter_is_known_by_its_fingerprint_not_its_identity(tmp_path):
    assert key(tmp_path, cut=Splitter("abc123").first_sentence_end) == key(tmp_path)
    trained = PunktParameters()
    trained.abbrev_types = {"kel"}
    one, other, same = SentenceSplitter(), SentenceSplitter(trained), SentenceSplitter()
    assert key(tmp_path, cut=one.first_sentence_end) == key(tmp_path, cut=same.first_sentence_end)
    assert key(tmp_path, cut=one.first_sentence_end) != key(tmp_path,
                                                            cut=other.first_sentence_end)


def test_a_cut_without_a_splitter_is_known_by_its_repr(tmp_path):
    def cut_a(text: str, final: bool) -> int | None:
        return None

    def cut_b(text: str, final: bool) -> int | None:
        return 0

    assert len({key(tmp_path, cut=cut_a), key(tmp_path, cut=cut_b), key(tmp_path, cut=None)}) == 3


def test_the_answer_cut_is_known_by_its_splitter(tmp_path):
    splitter = SentenceSplitter()
    first, second = AnswerCut(splitter), AnswerCut(splitter)
    assert key(tmp_path, cut=first) == key(tmp_path, cut=second)
    # and it is not the sentence cut of the same splitter
    assert key(tmp_path, cut=first) != key(tmp_path, cut=splitter.first_sentence_end)


def test_alternatives_per_token_are_in_the_key_when_more_than_one_is_asked(tmp_path):
    """A generation cached with one alternative per token must not answer a client that asks
    for twenty (the entropy trigger reads them); one, or none said, is the old key."""

    def keyed(top):
        lm = CachedLM(NamedLM(top_logprobs=top), tmp_path / f"{top}.sqlite")
        return lm._key("p", **REQUEST, cut=None)

    assert keyed(None) == keyed(1)
    assert len({keyed(1), keyed(2), keyed(20)}) == 3
    blob = (b'{"cut": "None", "format": 2, "logit_bias": {"7": -100.0}, "max_tokens": 8, '
            b'"model": "m", "prompt": "p", "stop": ["\\n\\n"], "top_logprobs": 20}')
    assert keyed(20) == hashlib.sha256(blob).hexdigest()


class AskedLM:
    """An LM that notes every request it is sent and answers with its stop strings."""

    model = "m"

    def __init__(self):
        self.asked = []

    async def generate(self, prompt, **kw):
        self.asked.append(kw)
        return Generation(text=f"{prompt} {kw.get('stop')}", tokens=[], finished=True,
                          prompt=prompt)


@pytest.mark.parametrize("change", [{"stop": None}, {"stop": ["Question:"]},
                                    {"max_tokens": 9}, {"logit_bias": {7: -50.0}}])
def test_a_generation_asked_with_other_settings_is_not_served_the_cached_one(tmp_path, change):
    """Each setting of a request reaches the key the cache looks it up by: the same prompt
    with another stop string, budget or bias is asked of the LM, not answered from the cache."""
    import asyncio

    inner = AskedLM()
    lm = CachedLM(inner, tmp_path / "c.sqlite")
    asked = {"max_tokens": 8, "stop": ["\n"], "logit_bias": None}
    first = asyncio.run(lm.generate("p", **asked))
    again = asyncio.run(lm.generate("p", **asked))
    other = asyncio.run(lm.generate("p", **{**asked, **change}))
    assert again.text == first.text and len(inner.asked) == 2 and lm.hits == 1
    assert other is not None and inner.asked[-1] == {**asked, "cut": None, **change}
