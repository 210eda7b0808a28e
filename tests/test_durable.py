"""Checkpointed runs (activerag.durable) with a scripted LM: a run that dies midway goes on from
its last step on the same thread, a finished one is given back without running, an unfinished
run of another question is refused."""

import pytest
from test_graph_routing import QUESTION, graph

from activerag import durable
from activerag.context import FlareContext
from activerag.durable.checkpoints import serializer
from activerag.errors import ActiveRagError
from activerag.testing.scripted import ScriptedLM, ends, sentence

CTX = FlareContext(theta=0.5, max_sentences=3)


class Killed(Exception):
    """Stands for the process dying: nothing after it runs."""


class DiesAfter(ScriptedLM):
    """A scripted LM whose process 'dies' (raises) at request number `at`, once."""

    def __init__(self, replies, at):
        super().__init__(replies)
        self.at = at

    async def generate(self, prompt, **kw):
        if len(self.prompts) == self.at:
            self.at = -1
            raise Killed
        return await super().generate(prompt, **kw)


def script():
    return [sentence("Alpha Beta was born in Kelmor. It", prob=0.9),
            sentence(" Kelmor lies on a river. It", prob=0.9), ends(" So the answer is Kelmor.")]


async def test_a_run_that_died_goes_on_from_its_last_step(tmp_path):
    lm = DiesAfter(script(), at=2)
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
        assert len(lm.prompts) == 2
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:  # a new process
        out = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
    # the third sentence was the only one asked for again: two were accepted before the kill
    assert len(lm.prompts) == 3
    assert [s["sentence"] for s in out["trace"]] == [
        "Alpha Beta was born in Kelmor.", "Kelmor lies on a river.", "So the answer is Kelmor."]
    assert out["lm_calls"] == 3


async def test_a_finished_thread_gives_its_answer_without_running(tmp_path):
    lm = ScriptedLM(script())
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        first = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
        again = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
        assert again["answer"] == first["answer"] and len(lm.prompts) == 3
        await durable.forget(saver, "t")
        with pytest.raises(AssertionError, match="no reply left"):  # forgotten: it runs again
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")


async def test_a_question_with_surrounding_spaces_resumes_its_own_run(tmp_path):
    # The graph keeps the question stripped; a dataset's "Who? " must resume, not be refused
    # as another question (HotpotQA's dev set has such questions).
    lm = DiesAfter(script(), at=2)
    asked = {"question": f" {QUESTION} "}
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        with pytest.raises(Killed):
            await durable.final(graph(lm), asked, CTX, saver, "t")
        out = await durable.final(graph(lm), asked, CTX, saver, "t")
    assert len(lm.prompts) == 3 and out["question"] == QUESTION


async def test_an_unfinished_thread_refuses_another_question(tmp_path):
    lm = DiesAfter(script(), at=1)
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
        with pytest.raises(ActiveRagError, match="unfinished run of another question"):
            await durable.final(graph(lm), {"question": "Who?"}, CTX, saver, "t")
        out = await durable.final(graph(lm), {"question": "Who?"}, CTX, saver, "other")
        assert out["question"] == "Who?"


async def test_a_run_stopped_before_its_first_step_starts_again(tmp_path):
    # Stopped between storing its input and its first step (an evaluation stopped by SIGTERM
    # did this): the thread holds only the input checkpoint, whose values carry no question
    # yet. It is the same question's run, not another's, and it starts again.
    lm = ScriptedLM(script())
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        held = graph(lm).copy(update={"checkpointer": saver})
        config = {"configurable": {"thread_id": "t"}}
        await held.aupdate_state(config, {"question": QUESTION}, as_node="__input__")
        state = await held.aget_state(config)
        assert state.next and "question" not in state.values
        out = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
    assert out["question"] == QUESTION and out["answer"].endswith("So the answer is Kelmor.")
    assert len(lm.prompts) == 3


async def test_an_evaluation_killed_mid_question_goes_on_from_its_last_step(tmp_path):
    from activerag.evaluation.datasets import Example
    from activerag.evaluation.evaluate import CHECKPOINTS, Run, evaluate

    lm = DiesAfter(script(), at=2)
    runs = {"flare": (graph(lm), CTX)}
    examples = [Example("q0", QUESTION, ["Kelmor"], ["Alpha Beta"])]
    with pytest.raises(Killed):
        await evaluate(Run(tmp_path / "run"), "t", runs, examples, progress=False)
    result = await evaluate(Run(tmp_path / "run"), "t", runs, examples, progress=False)
    assert len(lm.prompts) == 3 and result["summary"]["flare"]["em"] == 1.0
    [row] = Run(tmp_path / "run").rows()
    assert row["sentences"] == 3 and row["lm_calls"] == 3
    async with durable.checkpoints(tmp_path / "run" / CHECKPOINTS) as saver:  # dropped once kept
        state = await graph(lm).copy(update={"checkpointer": saver}).aget_state(
            {"configurable": {"thread_id": "flare/q0"}})
        assert not state.values


def _plant(path, module, name, args):
    """Rewrite the newest checkpoint in PATH so that its question names MODULE.NAME(*ARGS), as a
    crafted file would (LangGraph's msgpack format for a constructor call)."""
    import sqlite3

    import ormsgpack
    from langgraph.checkpoint.serde.jsonplus import (
        EXT_CONSTRUCTOR_POS_ARGS,
        JsonPlusSerializer,
        _msgpack_enc,
    )

    with sqlite3.connect(path) as db:
        rowid, kind, blob = db.execute(
            "SELECT rowid, type, checkpoint FROM checkpoints ORDER BY checkpoint_id DESC "
            "LIMIT 1").fetchone()
        checkpoint = JsonPlusSerializer(allowed_msgpack_modules=None).loads_typed((kind, blob))
        checkpoint["channel_values"]["answer"] = ormsgpack.Ext(
            EXT_CONSTRUCTOR_POS_ARGS, _msgpack_enc((module, name, args)))
        db.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?",
                   (_msgpack_enc(checkpoint), rowid))


async def test_a_checkpoint_that_names_a_callable_is_refused_and_nothing_in_it_runs(tmp_path):
    lm = DiesAfter(script(), at=2)
    path = tmp_path / "c.sqlite"
    async with durable.checkpoints(path) as saver:
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
    marker = tmp_path / "ran"
    _plant(path, "os", "system", [f"touch {marker}"])
    async with durable.checkpoints(path) as saver:
        with pytest.raises(ActiveRagError, match=r"c\.sqlite.*os\.system.*delete it"):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
    assert not marker.exists()


def test_the_state_types_round_trip_through_the_checkpoint_serializer(tmp_path):
    from langchain_core.documents import Document
    from langgraph.types import Overwrite, Send

    serde = serializer(tmp_path / "c.sqlite")
    # Overwrite: the start node's pending writes (a run killed right after it is resumed
    # from them; CI killed one in that window and the resume was refused)
    state = {"documents": [Document("text", id="d1", metadata={"title": "T"})],
             "tasks": [Send("propose", {"doc": 0, "prompt": [1, 2]})], "spans": [(0, 3)],
             "trace": Overwrite([])}
    back = serde.loads_typed(serde.dumps_typed(state))
    assert back["documents"] == state["documents"] and back["tasks"] == state["tasks"]
    assert back["trace"] == Overwrite([])
    with pytest.raises(ActiveRagError, match="pickle data"):
        serde.loads_typed(("pickle", b"\x80\x04N."))


async def test_a_finished_thread_refuses_another_method_without_running(tmp_path):
    lm = ScriptedLM(script())
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t", method="flare")
        with pytest.raises(ActiveRagError, match=r"method flare.*asked for single.*--thread"):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t",
                                method="single")
    assert len(lm.prompts) == 3


async def test_a_killed_run_is_not_resumed_by_another_method_or_other_settings(tmp_path):
    from dataclasses import replace

    lm = DiesAfter(script(), at=1)
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t",
                                method="flare")
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:  # a new process
        with pytest.raises(ActiveRagError, match="method flare"):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t",
                                method="single")
        with pytest.raises(ActiveRagError, match=r"theta 0\.5 -> 0\.0.*another --thread"):
            await durable.final(graph(lm), {"question": QUESTION}, replace(CTX, theta=0.0),
                                saver, "t", method="flare")
        assert len(lm.prompts) == 1
        out = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t",
                                  method="flare")
    assert len(out["trace"]) == 3 and len(lm.prompts) == 3


def test_the_settings_fingerprint_holds_every_field_in_key_order():
    from dataclasses import replace

    assert durable.fingerprint("flare", CTX) == durable.fingerprint("flare", replace(CTX))
    assert durable.fingerprint("flare", CTX) != durable.fingerprint("flare", replace(CTX, k=3))
    assert durable.fingerprint("flare", CTX) != durable.fingerprint(
        "flare", replace(CTX, base_url="http://elsewhere/v1"))
    assert durable.fingerprint("flare", CTX) != durable.fingerprint("single", CTX)


async def test_a_killed_run_with_other_settings_is_refused_not_mixed(tmp_path):
    from dataclasses import replace

    lm = DiesAfter(script(), at=1)
    async with durable.checkpoints(tmp_path / "c.sqlite") as saver:
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "t")
        with pytest.raises(ActiveRagError, match=r"theta 0\.5 -> 0\.0"):
            await durable.final(graph(lm), {"question": QUESTION}, replace(CTX, theta=0.0),
                                saver, "t")
    assert len(lm.prompts) == 1


async def test_a_checkpoint_file_that_is_no_database_is_refused_and_left_as_it_is(tmp_path):
    garbage = tmp_path / "threads.sqlite"
    garbage.write_bytes(b"\x00not a database\xff" * 200)
    before = garbage.read_bytes()
    with pytest.raises(ActiveRagError, match="is not a checkpoint file.*--checkpoints"):
        async with durable.checkpoints(garbage):
            pass
    assert garbage.read_bytes() == before
