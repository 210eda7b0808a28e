"""Replicas: a question's requests stay on one replica, questions spread over them, a replica
that fails is left out for a while and its request goes to the next one."""

import asyncio

import pytest

from activerag.errors import LMServerUnreachable, ModelMismatch
from activerag.serving.lm_errors import LMServerError
from activerag.serving.replicas import Replicas, home, order, sticky, sticky_key, urls


class Endpoint:
    """A replica that answers with its own name, or fails with ERROR while it is set."""

    def __init__(self, name, model="m"):
        self.base_url, self.model, self.error, self.prompts = name, model, None, []

    async def generate(self, prompt, **kw):
        self.prompts.append(prompt)
        if self.error:
            raise self.error
        return self.base_url

    async def token_ids(self, text):
        if self.error:
            raise self.error
        return [len(text)]


def test_order_goes_round_the_ring_from_the_home_replica_resting_ones_last():
    assert order(2, 4, {}, now=10.0) == [2, 3, 0, 1]
    assert order(2, 4, {3: 11.0, 0: 9.0}, now=10.0) == [2, 0, 1, 3]
    assert order(0, 3, {0: 11.0, 1: 12.0}, now=10.0) == [2, 0, 1]
    assert order(1, 2, {1: 10.0}, now=10.0) == [1, 0]  # rested exactly long enough


def test_keys_spread_over_replicas_and_each_has_one_home():
    homes = [home(f"q{i}", 3) for i in range(300)]
    assert all(homes.count(r) > 60 for r in range(3))
    assert home("q7", 3) == home("q7", 3)


def test_the_sticky_key_is_the_blocks_else_the_prompts_last_question():
    prompt = "Question: exemplar?\nAnswer: x\n\nQuestion: Where was Ada born?\nAnswer: She"
    assert sticky_key(prompt) == "Question: Where was Ada born?"
    assert sticky_key("no question here") == "no question here"
    # the line alone: what follows it (the answer so far, growing) does not move the key
    assert sticky_key("Question: Who?\nAnswer: A.\nB.\n") == "Question: Who?"
    with sticky("q1"):
        assert sticky_key(prompt) == "q1"
    assert sticky_key(prompt) == "Question: Where was Ada born?"


def test_urls_split_on_commas():
    assert urls("http://a/v1, http://b/v1,") == ["http://a/v1", "http://b/v1"]
    assert urls("http://a/v1") == ["http://a/v1"]


async def test_a_questions_requests_stay_on_one_replica():
    eps = [Endpoint("a"), Endpoint("b"), Endpoint("c")]
    lm = Replicas(eps)
    for q in range(12):
        with sticky(f"q{q}"):
            got = {await lm.generate(f"p{q}-{step}", max_tokens=4) for step in range(3)}
        assert got == {eps[home(f"q{q}", 3)].base_url}
    assert sorted(lm.served) != [0, 0, 36] and sum(lm.served) == 36


async def test_tasks_started_in_the_block_keep_its_key():
    eps = [Endpoint("a"), Endpoint("b")]
    lm = Replicas(eps)
    with sticky("q3"):
        got = await asyncio.gather(*[asyncio.create_task(lm.generate(f"p{i}", max_tokens=1))
                                     for i in range(4)])
    assert set(got) == {eps[home("q3", 2)].base_url}


@pytest.mark.parametrize("error", [LMServerUnreachable("refused"), LMServerError("busy")])
async def test_a_failing_replica_is_routed_around_and_rested(error, monkeypatch):
    eps = [Endpoint("a"), Endpoint("b")]
    lm = Replicas(eps, cooldown=30.0)
    key = next(f"q{i}" for i in range(50) if home(f"q{i}", 2) == 0)
    clock = [100.0]
    monkeypatch.setattr("activerag.serving.replicas.time.monotonic", lambda: clock[0])
    eps[0].error = error
    with sticky(key):
        assert await lm.generate("p", max_tokens=1) == "b"
        assert lm.down_until == {0: 130.0}
        assert await lm.generate("p2", max_tokens=1) == "b"
        assert eps[0].prompts == ["p"]  # resting: not asked again
        eps[0].error = None
        clock[0] = 131.0
        assert await lm.generate("p3", max_tokens=1) == "a"  # rested: home again
        assert lm.down_until == {}


async def test_every_replica_failing_names_each():
    eps = [Endpoint("a"), Endpoint("b")]
    for ep in eps:
        ep.error = LMServerUnreachable(f"{ep.base_url} refused")
    with pytest.raises(LMServerUnreachable, match="no replica answered") as caught:
        await Replicas(eps).generate("p", max_tokens=1)
    assert "a refused" in str(caught.value) and "b refused" in str(caught.value)
    with pytest.raises(LMServerUnreachable):
        await Replicas(eps).token_ids("p")


def test_replicas_of_different_models_are_refused():
    with pytest.raises(ModelMismatch, match="different models"):
        Replicas([Endpoint("a", "m1"), Endpoint("b", "m2")])


class Restarting(Endpoint):
    """A server that goes away for DOWN requests after answering once, then comes back."""

    def __init__(self, down):
        super().__init__("only")
        self.down = down

    async def generate(self, prompt, **kw):
        self.prompts.append(prompt)
        if len(self.prompts) > 1 and self.down > 0:
            self.down -= 1
            raise LMServerUnreachable("refused")
        return "ok"


async def test_a_server_that_answered_is_waited_for_while_it_restarts(monkeypatch):
    slept = []

    async def sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr("activerag.serving.replicas.asyncio.sleep", sleep)
    lm = Replicas([Restarting(down=3)])
    assert await lm.generate("p1", max_tokens=1) == "ok"
    assert await lm.generate("p2", max_tokens=1) == "ok"  # after three refusals
    assert slept == [1.0, 2.0, 4.0]


async def test_the_wait_is_bounded_and_a_server_never_answered_is_not_waited_for(monkeypatch):
    slept = []

    async def sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr("activerag.serving.replicas.asyncio.sleep", sleep)
    monkeypatch.setenv("ACTIVERAG_LM_RECONNECT", "0")
    lm = Replicas([Restarting(down=1)])
    await lm.generate("p1", max_tokens=1)
    with pytest.raises(LMServerUnreachable, match="no replica answered"):
        await lm.generate("p2", max_tokens=1)
    never = Endpoint("x")
    never.error = LMServerUnreachable("refused")
    monkeypatch.setenv("ACTIVERAG_LM_RECONNECT", "120")
    with pytest.raises(LMServerUnreachable):
        await Replicas([never]).generate("p", max_tokens=1)
    assert slept == [] and never.prompts == ["p"]


def test_replicas_say_the_alternatives_their_clients_ask_and_one_for_a_client_that_says_none():
    """A trigger that reads alternatives checks the LM's top_logprobs; replicas carry their
    clients' (the first's), and a client that states none asks one."""
    plain = Replicas([Endpoint("a"), Endpoint("b")])
    assert plain.top_logprobs == 1 and plain.model == "m" and plain.base_url == "a,b"
    asking = Endpoint("c")
    asking.top_logprobs = 20
    assert Replicas([asking]).top_logprobs == 20
