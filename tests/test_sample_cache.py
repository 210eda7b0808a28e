"""The light sampler's cache: a draw of N serves any later request for at most N of the same
prompt and settings (its first samples), a seeded request only the identical one, and the
samples served carry the wall time of the draw that made them."""

from dataclasses import dataclass, field

from test_fb_rag_graph import context, run

from activerag.graphs.fb_rag import build_fb_rag_graph
from activerag.serving.cache import CachedSampler
from activerag.serving.token_lm import Samples
from activerag.testing.scripted import ScriptedLM, WordTokens, ends


@dataclass
class CountingSampler:
    """Every sample it draws is new: "s1", "s2", ... in the order drawn."""

    model: str = "counting"
    drawn: int = 0
    requests: list[int] = field(default_factory=list)

    async def sample(self, prompt, n, max_tokens, *, temperature, top_p, top_k, seed,
                     separate=False):
        self.requests.append(n)
        texts = [f"s{self.drawn + i + 1}" for i in range(n)]
        self.drawn += n
        return Samples(texts, 10, 2 * n, 1)

    async def tokenize(self, text):
        return list(range(len(text.split())))


SETTINGS = {"temperature": 1.0, "top_p": 0.9, "top_k": 50, "seed": None}


async def draw(sampler, n, prompt="p", **changes):
    return await sampler.sample(prompt, n, 96, **{**SETTINGS, **changes})


async def test_a_draw_serves_smaller_requests_with_its_first_samples(tmp_path):
    inner = CountingSampler()
    cached = CachedSampler(inner, tmp_path / "c.sqlite")
    first = await draw(cached, 5)
    assert first.texts == ["s1", "s2", "s3", "s4", "s5"] and first.drawn_seconds is None
    again = await draw(CachedSampler(inner, tmp_path / "c.sqlite"), 3)  # a new process
    assert again.texts == ["s1", "s2", "s3"] and inner.requests == [5]
    assert again.drawn_seconds is not None and again.drawn_seconds >= 0
    assert (again.prompt_tokens, again.generated_tokens, again.requests) == (10, 6, 1)


async def test_a_larger_request_draws_anew_and_replaces_the_smaller_draw(tmp_path):
    inner = CountingSampler()
    cached = CachedSampler(inner, tmp_path / "c.sqlite")
    await draw(cached, 2)
    assert (await draw(cached, 3)).texts == ["s3", "s4", "s5"]
    assert (await draw(cached, 3)).texts == ["s3", "s4", "s5"]
    assert inner.requests == [2, 3] and cached.hits == 1


async def test_any_other_prompt_or_setting_draws_anew(tmp_path):
    inner = CountingSampler()
    cached = CachedSampler(inner, tmp_path / "c.sqlite")
    await draw(cached, 2)
    for change in ({"prompt": "q"}, {"temperature": 0.7}, {"top_p": 1.0}, {"top_k": 5}):
        await draw(cached, 2, **change)
    await cached.sample("p", 2, 64, **SETTINGS)
    assert inner.requests == [2] * 6 and cached.hits == 0


async def test_a_seeded_request_is_served_only_by_the_identical_one(tmp_path):
    inner = CountingSampler()
    cached = CachedSampler(inner, tmp_path / "c.sqlite")
    await draw(cached, 3, seed=1)
    await draw(cached, 2, seed=1)
    await draw(cached, 3, seed=1, separate=True)
    await draw(cached, 3, seed=2)
    assert inner.requests == [3, 2, 3, 3]
    assert (await draw(cached, 3, seed=1)).texts == ["s1", "s2", "s3"]


async def test_the_graph_reports_the_cached_draws_wall_time(tmp_path):
    inner = CountingSampler()
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen"), ends("Bergen")]),
                               token_lm=WordTokens(),
                               light_lm=CachedSampler(inner, tmp_path / "c.sqlite"))
    fresh, _ = await run(graph, context())
    cached, events = await run(graph, context())
    assert inner.requests == [3] and cached["samples"] == fresh["samples"]
    assert "sample_drawn" not in fresh["stage_seconds"]
    assert cached["stage_seconds"]["sample_drawn"] > 0
    assert [e["name"] for e in events][2] == "sample"


async def test_two_methods_drawing_the_same_samples_at_once_read_one_draw(tmp_path):
    import asyncio

    class Slow(CountingSampler):
        async def sample(self, *args, **kwargs):
            await asyncio.sleep(0.05)  # both requests are in flight before either is stored
            return await super().sample(*args, **kwargs)

    inner = Slow()
    a, b = CachedSampler(inner, tmp_path / "c.sqlite"), CachedSampler(inner, tmp_path / "c.sqlite")
    first, second = await asyncio.gather(draw(a, 3), draw(b, 3))
    assert first.texts == second.texts == ["s1", "s2", "s3"] and inner.requests == [3]
