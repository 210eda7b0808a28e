"""`activerag ask` of a method that reads no logprobs on a server that has none, and
`activerag demo`: the questions of each kind it shows, its tally and its exit status."""

import pytest

from activerag import cli
from activerag.testing.fake_lm import REPLY, Backend, backend

QUESTION = "Who was born in Kelmor?"


@pytest.mark.usefixtures("own_home")
def test_a_method_without_logprobs_answers_on_a_server_that_refuses_them(capsys):
    b = Backend({"logprobs"}, refuse_logprobs=True)
    with backend(b) as url:
        assert cli.main(["ask", "--method", "none", "--base-url", url, QUESTION]) == 0
    assert REPLY.strip() in capsys.readouterr().out
    asked = [body for path, body in b.requests
             if path.endswith("completions") and QUESTION in str(body)]
    assert asked and all("logprobs" not in body for body in asked)


DEMO_QUESTIONS = [
    {"question": "Where was the founder of Zeta born?", "answers": ["Vedria"], "hops": 2},
    {"question": "Who founded the firm in Ulm?", "answers": ["Orla Venn"], "hops": 2},
    {"question": "Where was Alpha Beta born?", "answers": ["Kelmor"], "hops": 1},
    {"question": "Where does Gamma live?", "answers": ["Orvale"], "hops": 1}]


@pytest.mark.usefixtures("own_home")
def test_demo_answers_the_first_questions_of_each_kind_and_tallies_them(monkeypatch, capsys):
    import activerag.demo
    import activerag.stores.corpus
    from activerag.cli import run

    class Ingested:
        def summary(self) -> str:
            return "demo corpus ingested"

    class Corpus:
        def __init__(self, *args) -> None:
            pass

        def ingest(self, path):
            return Ingested()

    asked, shown = [], []
    replies = {"Where was the founder of Zeta born?": "So the answer is Vedria.",
               "Where was Alpha Beta born?": "So the answer is Orvale."}

    async def answer(ns, settings):
        asked.append((ns.method, ns.question))
        shown.append((ns.trace, ns.json))  # the demo prints each run's trace, as text
        return {"answer": replies[ns.question]}

    monkeypatch.setenv("ACTIVERAG_BASE_URL", "http://127.0.0.1:9/v1")  # no server started
    monkeypatch.setattr(activerag.stores.corpus, "Corpus", Corpus)
    monkeypatch.setattr(activerag.demo, "load_demo_questions", lambda: DEMO_QUESTIONS)
    monkeypatch.setattr(run, "answer", answer)
    assert cli.main(["demo", "--n", "1"]) == 0
    out = capsys.readouterr().out
    assert asked == [("flare", "Where was the founder of Zeta born?"),
                     ("flare", "Where was Alpha Beta born?")]
    assert shown == [(True, False)] * 2
    assert "Q (2-hop): Where was the founder of Zeta born?   (gold: Vedria)" in out
    assert "Q (1-hop): Where was Alpha Beta born?   (gold: Kelmor)" in out
    assert "-> does NOT match the gold (extracted 'Orvale', gold 'Kelmor')" in out
    assert "\n1 of 2 demo answers match the gold (the first 1 questions of each kind" in out
