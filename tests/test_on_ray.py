"""`eval --ray`'s pure parts and its refusals (activerag/evaluation/on_ray.py), without a cluster:
--actors, the example carried in a row, the thread of a key, the error a Ray task carries, a
worker without the store, and a run folder asked other settings. The cluster's own tests are in
tests/integration/test_ray_eval.py."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.context import FlareContext
from activerag.errors import ActiveRagError, SettingError
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run, run_config
from activerag.evaluation.on_ray import (
    Answerer,
    _user_error,
    evaluate_on_ray,
    example_of,
    example_row,
    parse_actors,
    registry_runs,
    thread_of,
)


def test_actors_are_min_max_or_one_number():
    assert parse_actors("1:8") == (1, 8)
    assert parse_actors("3") == (3, 3)
    assert parse_actors("2:2") == (2, 2)
    for bad in ("0:2", "3:2", "a:b", "", "1:", ":4", "-1:2", "1.5:2"):
        with pytest.raises(SettingError, match=r"--actors .* is not MIN:MAX with 1 <= MIN <= "
                           r"MAX \(or one number N for a pool of N actors\)"):
            parse_actors(bad)


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@given(st.builds(Example, id=texts, question=texts, answers=st.lists(texts, max_size=3),
                 gold_titles=st.lists(texts, max_size=3),
                 kind=st.sampled_from(["short", "long", "yesno", "longbench"]),
                 short_answers=st.lists(st.lists(texts, max_size=2), max_size=2),
                 group=texts, context=texts,
                 gold_spans=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)),
                                     max_size=3)))
def test_an_example_comes_back_from_its_row_as_it_was(example):
    assert example_of(example_row(example)) == example


def test_each_key_has_a_thread_of_its_own_within_its_run():
    assert thread_of("ray:/runs/a", "flare", "7") == "ray:/runs/a/flare/7"
    assert thread_of("ray:/runs/a", "flare", "7") != thread_of("ray:/runs/b", "flare", "7")
    assert thread_of("p", "single", "7") != thread_of("p", "flare", "7")


class Wrapped(Exception):
    """Stands for Ray's RayTaskError: the original error kept as `cause`."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__("Traceback (most recent call last): ...")
        self.cause = cause


def test_the_error_a_task_carries_is_found_however_it_was_wrapped():
    mine = ActiveRagError("the Ray worker on h (pid 1): the store folder /x does not exist")
    assert _user_error(Wrapped(mine)) is mine
    outer = RuntimeError("Ray Data: a task failed")
    outer.__cause__ = Wrapped(mine)
    assert _user_error(outer) is mine
    assert _user_error(mine) is mine
    assert _user_error(Wrapped(Wrapped(mine))) is mine  # a wrapper's cause may be one too
    assert _user_error(RuntimeError("the node died")) is None


def test_a_worker_without_the_store_names_itself_and_the_path(tmp_path: Path):
    missing = tmp_path / "no-store"
    ctx = FlareContext(base_url="http://127.0.0.1:9/v1", store_dir=str(missing))
    actor = Answerer(partial(registry_runs, {"single": ctx}), None, "ray:run")
    example = Example(id="1", question="Who founded Daeselin Company?", answers=["x"])
    with pytest.raises(ActiveRagError) as caught:
        actor({"method": ["single"], "example": [example_row(example)]})
    message = str(caught.value)
    assert "the Ray worker on " in message and str(missing) in message
    assert "does not exist" in message and "\n" not in message


def test_a_run_folder_asked_other_settings_is_refused_before_ray_is_asked(tmp_path: Path):
    examples = [Example(id="1", question="Who?", answers=["x"])]
    old = {"single": (None, FlareContext(k=2))}
    run = Run(tmp_path / "run")
    run.start(run_config("demo", old, examples))
    run.close()
    new = {"single": (None, FlareContext(k=3))}
    # nothing listens on port 9: had Ray been asked first, the error would say so
    with pytest.raises(ActiveRagError, match=r"other settings \(\['contexts'\]\)"):
        evaluate_on_ray(Run(tmp_path / "run"), "demo", new, examples,
                        address="127.0.0.1:9", progress=False)


def test_actor_cpus_must_be_a_positive_number(tmp_path: Path):
    examples = [Example(id="1", question="Who?", answers=["x"])]
    runs = {"single": (None, FlareContext())}
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(SettingError, match="--actor-cpus"):
            evaluate_on_ray(Run(tmp_path / "run"), "demo", runs, examples, actor_cpus=bad,
                            address="127.0.0.1:9", progress=False)
    assert not (tmp_path / "run").exists()  # refused before the run folder was made


def test_a_question_is_answered_by_one_holder_at_a_time(postgres_url):
    """The lock around a question's checkpoints (a real PostgreSQL): a second actor (another
    session) and a second call on the same actor (the same session, which an advisory lock
    alone lets in again) each wait until the first holder is done; no lock is left after."""
    import asyncio
    import time

    def empty() -> dict:
        return {}

    first, other = (Answerer(empty, postgres_url, "ray:locks") for _ in range(2))
    order: list[str] = []

    async def hold(actor: Answerer, name: str, seconds: float) -> None:
        async with actor._lock("ray:locks/flare/q1"):
            order.append(f"{name} in")
            await asyncio.sleep(seconds)
            order.append(f"{name} out")

    async def same_actor_twice() -> None:
        await asyncio.gather(hold(first, "a", 0.6), hold(first, "b", 0.0))

    began = time.monotonic()
    run_first = asyncio.run_coroutine_threadsafe(same_actor_twice(), first.loop)
    time.sleep(0.2)  # a holds the lock; the other actor comes in after both of first's
    run_other = asyncio.run_coroutine_threadsafe(hold(other, "c", 0.0), other.loop)
    run_first.result(timeout=30)
    run_other.result(timeout=30)
    assert order[:2] == ["a in", "a out"]  # b and c waited for a
    assert sorted(order[2:]) == ["b in", "b out", "c in", "c out"]
    assert order[2][0] == order[3][0]  # whoever came in next went out before the other came in
    assert time.monotonic() - began >= 0.6 and first._held_here == {}
