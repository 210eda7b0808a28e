"""The cache of token-level requests (REPLUG's ensemble, SeaKR-lite's look-ahead): a second
identical request is served from disk with the same answer, a different one goes to the LM."""

import asyncio

from activerag.serving.cache import CachedTokenLM
from activerag.serving.token_lm import Steps
from activerag.testing.scripted_tokens import ScriptedTokenLM, says


def _lm() -> ScriptedTokenLM:
    return ScriptedTokenLM({"Vesk": says("So the answer is Vesk.")})


def test_a_repeated_look_ahead_is_served_from_the_cache_as_it_was_answered(tmp_path):
    async def go():
        scripted = _lm()
        prompt = await scripted.tokenize("Vesk is a city. Answer:")
        first = CachedTokenLM(scripted, tmp_path / "c.sqlite", served=[])
        live = await first.steps(prompt, 4, 2)
        # a new process: a fresh wrapper over the same file
        again = CachedTokenLM(scripted, tmp_path / "c.sqlite", served=[])
        cached = await again.steps(prompt, 4, 2)
        other_top = await again.steps(prompt, 4, 1)
        return scripted, live, cached, other_top, again

    scripted, live, cached, other_top, again = asyncio.run(go())
    assert isinstance(cached, Steps) and cached == live and live.positions
    assert all(isinstance(t, int) for p in cached.positions for t in p.top)
    assert [c["kind"] for c in scripted.calls] == ["steps", "steps"]  # top=1 asked the LM
    assert again.hits == 1 and len(other_top.positions[0].top) == 1


def test_a_repeated_scoring_is_served_from_the_cache(tmp_path):
    async def go():
        scripted = _lm()
        lm = CachedTokenLM(scripted, tmp_path / "c.sqlite", served=[])
        prompt = await lm.tokenize("Vesk is a city. Answer:")
        answer = await lm.tokenize("So the answer is Vesk.")
        first = await lm.score(prompt, answer)
        second = await lm.score(prompt, answer)
        shorter = await lm.score(prompt, answer[:2])
        return scripted, lm, first, second, shorter

    scripted, lm, first, second, shorter = asyncio.run(go())
    assert first == second and len(first) == 5 and shorter == first[:2]
    assert [c["kind"] for c in scripted.calls] == ["score", "score"] and lm.hits == 1


def test_another_servers_weights_are_not_served_this_ones_answers(tmp_path):
    async def go():
        scripted = _lm()
        prompt = await scripted.tokenize("Vesk is a city. Answer:")
        await CachedTokenLM(scripted, tmp_path / "c.sqlite", served=[{"root": "a"}]).steps(
            prompt, 4, 2)
        other = CachedTokenLM(scripted, tmp_path / "c.sqlite", served=[{"root": "b"}])
        await other.steps(prompt, 4, 2)
        return other

    assert asyncio.run(go()).hits == 0


def test_the_token_lm_a_node_gets_is_cached_only_under_cache(tmp_path):
    from activerag.context import ServingContext
    from activerag.nodes.parts import Parts
    from activerag.serving import cache
    from activerag.testing.scripted import ScriptedLM

    ctx = ServingContext(base_url="http://127.0.0.1:9/v1", model="m")
    saved = cache.state()
    try:
        plain = asyncio.run(Parts(lm=ScriptedLM([])).token_lm_for(ctx))
        cache.enable(tmp_path / "c.sqlite")
        cached = asyncio.run(Parts(lm=ScriptedLM([])).token_lm_for(ctx))
    finally:
        cache.restore(saved)
    assert not isinstance(plain, CachedTokenLM)
    assert isinstance(cached, CachedTokenLM) and cached.lm.base_url == ctx.base_url


def _keys(path) -> list[str]:
    import sqlite3

    with sqlite3.connect(path) as db:  # the table's name is the file format: older runs' caches
        return [k for (k,) in db.execute("SELECT key FROM tokens ORDER BY key")]


def test_the_keys_name_the_request_its_tokens_and_its_budget(tmp_path):
    import hashlib

    async def go():
        lm = CachedTokenLM(_lm(), tmp_path / "c.sqlite", served=[])
        prompt = await lm.tokenize("Vesk is a city. Answer:")
        answer = await lm.tokenize("So the answer is Vesk.")
        assert prompt == [1, 2, 3, 4, 5] and answer == [6, 7, 8, 2, 9]
        await lm.steps(prompt, 4, 2)
        await lm.steps(prompt, 4, 2)
        await lm.steps(prompt, 3, 2)  # another budget
        await lm.steps(prompt + answer[:1], 4, 2)  # another prompt
        await lm.score(prompt, answer)
        await lm.score(prompt, answer)
        await lm.score(prompt + answer[:1], answer)  # another prompt
        await lm.score(prompt, prompt)  # the same prompt, another continuation
        return lm

    lm = asyncio.run(go())
    assert lm.hits == 2 and [c["kind"] for c in lm.lm.calls].count("steps") == 3
    # the bytes pinned: caches written by earlier runs stay valid (test_cache_key's rule)
    steps = (b'{"format": 2, "max_tokens": 4, "model": "scripted-tokens", "prompt": [1, 2, 3, 4, '
             b'5], "request": "steps", "served": [], "top": 2}')
    score = (b'{"continuation": [6, 7, 8, 2, 9], "format": 2, "model": "scripted-tokens", '
             b'"prompt": [1, 2, 3, 4, 5], "request": "score", "served": []}')
    keys = _keys(tmp_path / "c.sqlite")
    assert len(keys) == 6
    assert {hashlib.sha256(steps).hexdigest(), hashlib.sha256(score).hexdigest()} <= set(keys)
