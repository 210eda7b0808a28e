"""The light sampler's cache (serving/cache.py, CachedSampler) keeps a draw under every request
field that changes the samples: a request that differs from a remembered one in any single
field (the model included) is drawn anew, never served the other's samples (issue #38)."""

from dataclasses import dataclass, field

import pytest

from activerag.serving.cache import CachedSampler
from activerag.serving.token_lm import Samples


@dataclass
class Sampler:
    """Every sample it draws is new: "s1", "s2", ... in the order drawn."""

    model: str = "m"
    drawn: int = 0
    requests: list[dict] = field(default_factory=list)

    async def sample(self, prompt, n, max_tokens, **settings):
        self.requests.append({"prompt": prompt, "n": n, **settings})
        texts = [f"s{self.drawn + i + 1}" for i in range(n)]
        self.drawn += n
        return Samples(texts, 10, 2 * n, 1)


BASE = {"prompt": "p", "n": 2, "max_tokens": 96, "temperature": 1.0, "top_p": 0.9, "top_k": 50,
        "seed": 7, "separate": False, "stop": ["\n"]}
CHANGES = {"prompt": "q", "n": 1, "max_tokens": 95, "temperature": 0.5, "top_p": 0.8,
           "top_k": 40, "seed": 8, "separate": True, "stop": ["."]}


async def draw(cached, request):
    request = dict(request)
    return await cached.sample(request.pop("prompt"), request.pop("n"),
                               request.pop("max_tokens"), **request)


def test_every_request_field_is_changed_by_one_case():
    assert set(CHANGES) == set(BASE)


@pytest.mark.parametrize("name", [*CHANGES, "model"])
async def test_a_request_that_differs_in_one_field_is_drawn_anew(tmp_path, name):
    inner = Sampler()
    first = await draw(CachedSampler(inner, tmp_path / "c.sqlite"), BASE)
    other = Sampler(model="other model", drawn=inner.drawn) if name == "model" else inner
    changed = BASE if name == "model" else {**BASE, name: CHANGES[name]}
    again = await draw(CachedSampler(other, tmp_path / "c.sqlite"), changed)
    assert len(other.requests) == (2 if other is inner else 1)
    assert not set(again.texts) & set(first.texts)


async def test_the_identical_request_is_served_from_the_cache(tmp_path):
    inner = Sampler()
    first = await draw(CachedSampler(inner, tmp_path / "c.sqlite"), BASE)
    again = await draw(CachedSampler(Sampler(drawn=99), tmp_path / "c.sqlite"), BASE)
    assert again.texts == first.texts and len(inner.requests) == 1
