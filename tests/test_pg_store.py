"""ACTIVERAG_DATABASE_URL against a real PostgreSQL: the LM cache's twin, durable threads (with
the allowlisting serializer), an evaluation shared by two workers, and the URL's errors."""

from urllib.parse import urlsplit

import pytest
from test_durable import CTX, DiesAfter, Killed, script
from test_graph_routing import QUESTION, graph

from activerag import durable
from activerag.database import DatabaseError, check
from activerag.errors import ActiveRagError
from activerag.serving.cache import CachedLM
from activerag.serving.generation import Generation
from activerag.serving.pg_cache import PgTable


@pytest.fixture
def url(postgres_url, allow_port, monkeypatch):
    allow_port(urlsplit(postgres_url).port)
    monkeypatch.setenv("ACTIVERAG_DATABASE_URL", postgres_url)
    return postgres_url


class EchoLM:
    model = "m"

    def __init__(self):
        self.asked = 0

    async def generate(self, prompt, **kw):
        self.asked += 1
        return Generation(text=prompt.upper(), tokens=[], finished=True, prompt=prompt)


def test_the_cache_table_keeps_json_values_and_replaces_them(url):
    table = PgTable(url, "t_unit")
    assert table.get("k") is None
    table.put("k", {"texts": ["a", "b"], "p": 0.25})
    table.put("k", {"texts": ["c"], "p": 0.5})
    assert PgTable(url, "t_unit").get("k") == {"texts": ["c"], "p": 0.5}  # another connection


async def test_with_the_variable_the_lm_cache_lives_in_the_database(url, tmp_path):
    first, second = EchoLM(), EchoLM()
    a = CachedLM(first, tmp_path / "lm.sqlite", served=[])
    await a.generate("hello", max_tokens=4)
    b = CachedLM(second, tmp_path / "other.sqlite", served=[])  # another process, another file
    out = await b.generate("hello", max_tokens=4)
    assert out.text == "HELLO" and second.asked == 0 and b.hits == 1
    assert not (tmp_path / "lm.sqlite").exists()


async def test_a_thread_in_the_database_goes_on_from_its_last_step(url):
    lm = DiesAfter(script(), at=2)
    async with durable.checkpoints(None) as saver:  # type: ignore[arg-type]
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "pg-t")
    async with durable.checkpoints(None) as saver:  # a new process
        out = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "pg-t")
        again = await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "pg-t")
        with pytest.raises(ActiveRagError, match="other settings"):
            await durable.final(graph(lm), {"question": QUESTION}, CTX.__class__(theta=0.1),
                                saver, "pg-t")
    assert len(lm.prompts) == 3 and again["answer"] == out["answer"]
    assert [s["sentence"] for s in out["trace"]][-1] == "So the answer is Kelmor."


async def test_a_stored_value_naming_a_callable_is_refused_not_called(url, tmp_path):
    import ormsgpack
    import psycopg
    from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_POS_ARGS, _msgpack_enc

    lm = DiesAfter(script(), at=2)
    async with durable.checkpoints(None) as saver:  # type: ignore[arg-type]
        with pytest.raises(Killed):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "pg-evil")
    marker = tmp_path / "ran"
    evil = ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS,
                         _msgpack_enc(("os", "system", [f"touch {marker}"])))
    with psycopg.connect(url, autocommit=True) as db:
        n = db.execute("UPDATE checkpoint_blobs SET type = 'msgpack', blob = %s WHERE "
                       "thread_id = 'pg-evil' AND type <> 'empty'",
                       (_msgpack_enc(evil),)).rowcount
    assert n >= 1
    async with durable.checkpoints(None) as saver:  # type: ignore[arg-type]
        with pytest.raises(ActiveRagError, match=r"ACTIVERAG_DATABASE_URL.*os\.system"):
            await durable.final(graph(lm), {"question": QUESTION}, CTX, saver, "pg-evil")
    assert not marker.exists()


@pytest.mark.parametrize("value, said", [
    ("mysql://u@h/db", "is not a PostgreSQL URL"),
    ("postgresql://u:secret@127.0.0.1:1/db", "did not answer"),
])
def test_a_bad_database_url_is_refused_by_the_variables_name(monkeypatch, value, said):
    monkeypatch.setenv("ACTIVERAG_DATABASE_URL", value)
    with pytest.raises(DatabaseError, match=f"ACTIVERAG_DATABASE_URL=.*{said}") as caught:
        check()
    assert "secret" not in str(caught.value)


def test_eval_with_an_unreachable_database_stops_before_any_lm_call(monkeypatch, capsys,
                                                                      tmp_path):
    from activerag.cli import main

    monkeypatch.setenv("ACTIVERAG_DATABASE_URL", "postgresql://u@127.0.0.1:1/db")
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    # the LM's URL is a port nothing serves: had the eval asked it, the error would say so
    code = main(["eval", "--dataset", "demo", "--n", "1", "--methods", "none",
                 "--base-url", "http://127.0.0.1:9/v1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("activerag: error: ACTIVERAG_DATABASE_URL=")
    assert "did not answer" in err[0]


def test_ask_on_a_thread_with_an_unreachable_database_stops_before_any_server_is_asked(
        monkeypatch, capsys, tmp_path):
    from activerag.cli import main

    monkeypatch.setenv("ACTIVERAG_DATABASE_URL", "postgresql://u@127.0.0.1:1/db")
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    code = main(["ask", "Who founded Gepu?", "--thread", "t",
                 "--base-url", "http://127.0.0.1:9/v1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("activerag: error: ACTIVERAG_DATABASE_URL=")


@pytest.mark.parametrize("words, needs_it", [([], False), (["--thread", "t1"], True)])
def test_ask_reaches_the_database_only_for_a_thread(monkeypatch, capsys, tmp_path, words,
                                                    needs_it, allow_port):
    """A plain `ask` keeps nothing, so an unreachable ACTIVERAG_DATABASE_URL does not stop it
    (the LM server it names is what it then fails on); with --thread it is refused first."""
    from activerag.cli import main

    monkeypatch.setenv("ACTIVERAG_DATABASE_URL", "postgresql://u@127.0.0.1:1/db")
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    allow_port(9)  # nothing serves it: the refused connection is the error a plain ask meets
    code = main(["ask", "--method", "none", "--base-url", "http://127.0.0.1:9/v1", *words,
                 "Who founded Zaezum Works?"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("ACTIVERAG_DATABASE_URL" in err) is needs_it
    assert ("127.0.0.1:9" in err) is not needs_it
