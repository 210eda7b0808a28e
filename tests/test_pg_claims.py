"""The claim table of a shared evaluation (activerag/evaluation/claims.py) against a real
PostgreSQL: two claimers never get the same question, an expired lease is claimed again, a
renewed one is not, a finished question is never handed out again, and the summary counts
every question once."""

import asyncio
import contextlib
from urllib.parse import urlsplit

import pytest

from activerag.errors import ActiveRagError, SettingError
from activerag.evaluation.claims import lease_seconds, open_claims, renewing
from activerag.evaluation.shared import shared_summary

CONFIG = {"dataset": "t", "ids": ["q0", "q1", "q2"], "methods": ["flare", "single"],
          "contexts": {}}
ITEMS = [(m, i) for m in CONFIG["methods"] for i in CONFIG["ids"]]


@pytest.fixture
def url(postgres_url, allow_port):
    allow_port(urlsplit(postgres_url).port)
    return postgres_url


def row(method, id_, em=1.0):
    return {"method": method, "id": id_, "answer": "a", "prediction": "a", "em": em, "f1": em,
            "precision": em, "recall": em, "retrieved_titles": [], "gold_title_recall": None,
            "sentences": 1, "retrieved_sentences": 0, "lm_calls": 1, "prompt_tokens": 1,
            "generated_tokens": 1, "answer_tokens": 1, "retrievals": 0, "retrieval_steps": 0,
            "group": "", "seconds": 0.1}


async def test_two_claimers_never_get_the_same_question(url):
    async with open_claims(url, "two", 60, "a") as a, open_claims(url, "two", 60, "b") as b:
        await asyncio.gather(a.start(CONFIG, ITEMS), b.start(CONFIG, ITEMS))
        # one claim each first, so both hold a question whatever the scheduler does next (a race
        # alone may let one claimer drain the table before the other's first query lands)
        got = {"a": [await a.claim()], "b": [await b.claim()]}
        assert got["a"][0] != got["b"][0]

        async def take(claims):
            while (item := await claims.claim()) is not None:
                got[claims.worker].append(item)

        await asyncio.gather(*[take(c) for c in (a, b, a, b)])  # four claimers on two links
        taken = got["a"] + got["b"]
        assert sorted(taken) == sorted(ITEMS)  # each once, none left out
        assert set((await a.claim_counts()).values()) == {1}


async def test_eight_workers_racing_for_many_questions_never_share_one(url):
    items = [("flare", f"q{i}") for i in range(120)]
    async with contextlib.AsyncExitStack() as stack:
        workers = [await stack.enter_async_context(open_claims(url, "race", 60, f"w{n}"))
                   for n in range(8)]
        await workers[0].start({**CONFIG, "ids": [i for _, i in items], "methods": ["flare"]},
                               items)
        got: list[tuple[str, str]] = []

        async def take(claims):
            while (item := await claims.claim()) is not None:
                got.append(item)

        await asyncio.gather(*[take(w) for w in workers])
        assert len(got) == len(set(got)) == len(items)
        assert set((await workers[0].claim_counts()).values()) == {1}


async def test_one_claim_leases_one_question_whatever_plan_the_statistics_bring(url):
    # A large run analysed, then a small one: the planner estimates the small run at a row or
    # so and, with the pick as a plain subquery, ran it once per row of the run, leasing all
    # six to one claim (seen in CI: the worker then waited on its own leases for ever).
    import psycopg

    big = [("flare", f"q{i}") for i in range(200)]
    async with open_claims(url, "skew-big", 60, "a") as a, \
            open_claims(url, "skew-small", 60, "b") as b:
        await a.start({**CONFIG, "ids": [i for _, i in big], "methods": ["flare"]}, big)
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
            await db.execute("ANALYZE activerag_eval_claims")
        await b.start(CONFIG, ITEMS)
        assert await b.claim() == ITEMS[0]
        counts = await b.claim_counts()
        assert sum(counts.values()) == 1, counts
        assert await b.claim() == ITEMS[1]


async def test_a_claimer_skips_the_row_another_is_claiming_instead_of_waiting(url):
    import psycopg

    async with open_claims(url, "skip", 60, "a") as a:
        await a.start(CONFIG, ITEMS[:2])
        async with await psycopg.AsyncConnection.connect(url) as other:  # mid-claim: row locked
            await other.execute("SELECT 1 FROM activerag_eval_claims WHERE run = 'skip' AND "
                                "id = 'q0' FOR UPDATE")
            assert await asyncio.wait_for(a.claim(), timeout=10) == ITEMS[1]
            await other.rollback()
        assert await a.claim() == ITEMS[0]


async def test_an_expired_lease_is_claimed_again_and_a_renewed_one_is_not(url):
    # a 3 s lease and waits of 2 s: every check has a second's margin, since the lease runs on
    # the database's wall clock and the waits on the loop's monotonic one (a busy CI machine)
    async with open_claims(url, "lease", 3.0, "a") as a, open_claims(url, "lease", 3.0, "b") as b:
        await a.start(CONFIG, ITEMS[:1])
        first = await a.claim()
        assert first == ITEMS[0]
        assert await b.claim() is None  # a's lease is live
        await asyncio.sleep(2.0)
        assert await a.renew() == 1
        await asyncio.sleep(2.0)
        assert await b.claim() is None  # renewed 2 s ago: still a's (4 s after the claim)
        await asyncio.sleep(2.0)  # a "killed": renews no more
        assert await b.claim() == first
        assert (await b.claim_counts())[first] == 2
        assert await a.renew() == 0  # a holds nothing any more


async def test_a_worker_whose_event_loop_is_busy_keeps_its_leases(url):
    import time

    async with open_claims(url, "busy", 2.0, "a") as a, open_claims(url, "busy", 2.0, "b") as b:
        await a.start(CONFIG, ITEMS[:1])
        assert await a.claim() == ITEMS[0]
        with renewing(a) as errors:
            time.sleep(4.0)  # a store loading: nothing else runs on this loop
            assert await b.claim() is None
        assert errors == []
        await asyncio.sleep(3.0)  # renewal stopped, as in a killed worker (a second's margin over
        # the 2 s lease: the database's wall clock and the loop's monotonic one may drift)
        assert await b.claim() == ITEMS[0]


async def test_a_finished_question_is_never_handed_out_again(url):
    async with open_claims(url, "done", 1.0, "a") as a, open_claims(url, "done", 1.0, "b") as b:
        await a.start(CONFIG, ITEMS[:1])
        assert await a.claim() == ITEMS[0]
        assert await a.finish(*ITEMS[0], row(*ITEMS[0])) is True
        await asyncio.sleep(1.1)  # past any lease
        assert await b.claim() is None
        assert await a.remaining() == 0
        assert await b.finish(*ITEMS[0], row(*ITEMS[0], em=0.0)) is False
        assert [r["em"] for r in await b.rows()] == [1.0]


async def test_a_question_finished_by_two_workers_counts_once(url):
    async with open_claims(url, "once", 1.0, "a") as a, open_claims(url, "once", 1.0, "b") as b:
        await a.start(CONFIG, ITEMS)
        for _ in ITEMS:
            await a.claim()
        await asyncio.sleep(1.5)  # a stalls past its leases (with a margin, as above); b takes
        # every question again
        for item in ITEMS:
            assert await b.claim() == item
            assert await b.finish(*item, row(*item, em=1.0))
        for item in ITEMS:  # a wakes up and finishes them too
            assert await a.finish(*item, row(*item, em=0.0)) is False
        rows = await a.rows()
        summary = shared_summary(CONFIG, rows, {})
        assert len(rows) == len(ITEMS) and summary["missing"] == 0
        assert summary["finished"] == summary["expected"] == 6
        assert summary["summary"]["flare"]["n"] == 3 and summary["summary"]["flare"]["em"] == 1.0


async def test_a_worker_that_stops_on_an_error_gives_its_claims_back(url):
    async with open_claims(url, "release", 600, "a") as a, open_claims(url, "release", 600,
                                                                       "b") as b:
        await a.start(CONFIG, ITEMS[:1])
        assert await a.claim() == ITEMS[0]
        assert await b.claim() is None
        await a.release()
        assert await b.claim() == ITEMS[0]


async def test_a_run_name_started_with_other_settings_is_refused(url):
    async with open_claims(url, "cfg", 60, "a") as a:
        await a.start(CONFIG, ITEMS)
        with pytest.raises(ActiveRagError, match=r"'cfg'.*other settings \(methods\).*--run"):
            await a.start({**CONFIG, "methods": ["flare"]}, ITEMS[:3])


def test_the_lease_comes_from_the_flag_else_the_variable_else_the_default(monkeypatch):
    monkeypatch.delenv("ACTIVERAG_EVAL_LEASE", raising=False)
    assert lease_seconds() == 120.0
    monkeypatch.setenv("ACTIVERAG_EVAL_LEASE", "30")
    assert lease_seconds() == 30.0 and lease_seconds(5) == 5.0
    for bad in ("0.5", "soon", "nan", "inf"):
        monkeypatch.setenv("ACTIVERAG_EVAL_LEASE", bad)
        with pytest.raises(SettingError, match="ACTIVERAG_EVAL_LEASE"):
            lease_seconds()
    with pytest.raises(SettingError, match="--lease"):
        lease_seconds(0)
