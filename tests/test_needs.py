"""Each method's needs are checked against its server before its first question: an unmet one
is refused in one line naming the missing ability and the methods that would run there; a
method that reads no logprobs runs on a server without them with a client that asks none."""

import re

import pytest

from activerag import cli
from activerag.cli.abilities import check_needs, needs_of, runnable
from activerag.context import FlareContext
from activerag.graphs import registry
from activerag.nodes.replug.context import ReplugContext
from activerag.serving.lm import VLLMClient
from activerag.serving.probe_requests import PROMPT, Abilities
from activerag.testing import memory_retriever
from activerag.testing.fake_lm import REPLY, Backend, backend

QUESTION = "Who was born in Kelmor?"


pytestmark = pytest.mark.usefixtures("own_home")


def error_line(capsys) -> str:
    _, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("activerag: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def only_probed(b: Backend) -> bool:
    """Every completion request B got was the probe's (tiny, its own prompt), none a method's."""
    return all(body.get("max_tokens", 0) <= 2 and QUESTION not in str(body)
               and body.get("prompt", PROMPT) in (PROMPT, b.ids(PROMPT), [0])
               for path, body in b.requests if path.endswith("completions"))


def works(line: str) -> list[str]:
    return re.search(r"methods that would run there: ([^(]*) \(", line).group(1).split(", ")


def test_flare_on_a_server_without_logprobs_fails_before_its_first_request(capsys):
    b = Backend({"logprobs"})
    with backend(b) as url:
        assert cli.main(["ask", "--method", "flare", "--base-url", url, QUESTION]) == 2
    line = error_line(capsys)
    assert line.startswith(f"activerag: error: method flare needs logprobs, which the server "
                           f"at {url} lacks")
    assert {"single", "none", "long_context"} <= set(works(line))
    assert not {"flare", "flare_instruct", "replug", "app"} & set(works(line))
    assert f"activerag doctor {url}" in line
    assert b.requests and only_probed(b)


def test_the_entropy_trigger_needs_twenty_alternatives_and_flare_s_own_does_not(capsys):
    b = Backend(max_top=5)
    with backend(b) as url:
        assert cli.main(["ask", "--method", "flare", "--trigger", "entropy", "--base-url", url,
                         QUESTION]) == 2
    line = error_line(capsys)
    assert "method flare needs top_logprobs >= 20" in line and "it gives 5" in line
    assert "max allowed: 5" in line
    assert {"flare", "flare_instruct", "single"} <= set(works(line))
    assert not {"flare_etc", "replug", "gate_entropy_mean"} & set(works(line))
    assert only_probed(b)


@pytest.mark.parametrize(("method", "lacks", "named"), [
    ("replug_rescore", "echo", "echo"), ("gate_lexsim", "n", "n"),
    ("flare_instruct", "logit_bias", "logit_bias"), ("replug", "token_ids", "token_ids"),
    ("flare_replug", "tokenize", "tokenize"), ("single", "stream", "stream")])
def test_each_method_is_refused_for_the_ability_it_needs(capsys, method, lacks, named):
    b = Backend({lacks})
    with backend(b) as url:
        assert cli.main(["ask", "--method", method, "--base-url", url, QUESTION]) == 2
    line = error_line(capsys)
    assert f"method {method} needs {named}, which the server" in line
    assert method not in works(line)
    assert only_probed(b)


def test_replug_needs_the_top_logprobs_its_run_asks_for():
    flare = FlareContext(base_url="http://a/v1")
    assert needs_of("replug", ReplugContext(base_url="http://a/v1", top_logprobs=5)) == {
        "http://a/v1": frozenset({"completions", "tokenize", "token_ids", "top_logprobs_5"})}
    assert needs_of("flare", flare) == {"http://a/v1": registry.LOGPROBS}
    etc = registry.method("flare_etc", flare)[1]
    assert "top_logprobs_20" in needs_of("flare_etc", etc)["http://a/v1"]


def test_a_trigger_that_reads_two_alternatives_needs_them_of_the_server():
    """FLARE run with the margin trigger (registered with top_logprobs=2) reads the top two
    logprobs of each draft token: its server must give at least two, whatever the method's
    own row says."""
    flare = FlareContext(base_url="http://a/v1")
    by_margin = FlareContext(base_url="http://a/v1", trigger="margin")
    assert {"logprobs", "top_logprobs_2"} <= needs_of("flare", by_margin)["http://a/v1"]
    assert not any(n.startswith("top_logprobs_") for n in needs_of("flare", flare)["http://a/v1"])


def test_fb_rag_s_light_sampler_is_checked_for_n(capsys, tmp_path):
    context = tmp_path / "context.txt"
    context.write_text(" ".join(f"Word{i} lives in Kelmor." for i in range(50)))
    strong, light = Backend(), Backend({"n"})
    with backend(strong) as strong_url, backend(light) as light_url:
        assert cli.main(["ask", "--method", "fb_rag", "--strong-url", strong_url, "--light-url",
                         light_url, "--context-file", str(context), QUESTION]) == 2
    line = error_line(capsys)
    assert f"method fb_rag needs n, which the server at {light_url} lacks" in line
    assert only_probed(strong) and only_probed(light)


def test_a_method_whose_needs_are_met_keeps_its_graph():
    with backend(Backend()) as url:
        graph, ctx = registry.method("flare", FlareContext(base_url=url))
        assert check_needs({"flare": (graph, ctx)})["flare"] == (graph, ctx)
        graph, ctx = registry.method("single", FlareContext(base_url=url))
        assert check_needs({"single": (graph, ctx)})["single"][0] is graph


def test_a_method_that_reads_no_logprobs_gets_a_client_that_asks_none():
    b = Backend({"logprobs"}, refuse_logprobs=True)
    with backend(b) as url:
        graph, ctx = registry.method("single", FlareContext(base_url=url))
        rebuilt, same = check_needs({"single": (graph, ctx)})["single"]
        assert rebuilt is not graph and same is ctx


async def test_the_client_without_logprobs_runs_single_on_such_a_server():
    from activerag.graphs.single import build_single_graph
    from activerag.sentences import SentenceSplitter

    b = Backend({"logprobs"}, refuse_logprobs=True)
    with backend(b) as url:
        lm = VLLMClient(url, top_logprobs=0)
        gen = await lm.generate("Where?", max_tokens=3)
        assert gen.text == " Kelmor lies on"
        assert gen.tokens == [] and gen.generated_tokens == 3
        retriever = memory_retriever({"Kelmor": "Kelmor lies on the Vedria."}, 1)
        graph = build_single_graph(lm=lm, retriever=retriever, splitter=SentenceSplitter())
        out = await graph.ainvoke({"question": QUESTION}, context=FlareContext(base_url=url))
    assert out["answer"].strip() == REPLY.strip()
    asked = [body for path, body in b.requests if path.endswith("completions")]
    assert asked and all("logprobs" not in body for body in asked)


async def test_by_default_the_client_still_asks_for_logprobs():
    b = Backend()
    with backend(b) as url:
        gen = await VLLMClient(url).generate("Where?", max_tokens=2)
    assert [body["logprobs"] for _, body in b.requests] == [1]
    assert len(gen.tokens) == 2 and gen.generated_tokens == 2


def test_runnable_methods_follow_the_abilities():
    everything = Abilities("u", "m", frozenset({"completions", "stream", "logprobs",
                                                "top_logprobs", "echo", "n", "token_ids",
                                                "tokenize", "logit_bias", "chat"}), 20)
    assert runnable(everything) == list(registry.METHODS)
    text = Abilities("u", "m", frozenset({"completions", "stream", "n", "tokenize"}))
    assert runnable(text) == [m for m in registry.METHODS if m in {
        "none", "single", "single_k1", "single_k10", "fb_rag", "fb_rag_fb", "long_context",
        "vanilla_rag", "op_rag", "self_route"}]
    no_n = Abilities("u", "m", frozenset({"completions", "stream", "tokenize"}))
    assert "fb_rag" not in runnable(no_n) and "fb_rag" in runnable(no_n, text)


@pytest.mark.parametrize(("most_n", "asked", "has"), [
    (None, 10, True), (5, 5, True), (5, 6, False), (1, 2, False)])
def test_n_k_holds_up_to_the_server_s_cap(most_n, asked, has):
    found = Abilities("u", "m", frozenset({"n"}), most_n=most_n)
    assert found.has(f"n_{asked}") is has
    assert not Abilities("u", "m", frozenset(), most_n=None).has("n_2")


def test_lexsim_needs_its_own_sample_count_in_one_request():
    from activerag.nodes.fb_rag.context import FBRagContext
    from activerag.nodes.gated.context import GateContext

    url = "http://lm/v1"
    lexsim = {"estimator": "lexsim", "base_url": url}
    assert {"n", "n_10"} <= needs_of("gate_lexsim", GateContext(**lexsim))[url]
    four = needs_of("gate_lexsim", GateContext(**lexsim, lexsim_samples=4))[url]
    assert {"n", "n_4"} <= four and "n_10" not in four
    plain = needs_of("gate_lexsim", GateContext(base_url=url, estimator="entropy_max"))[url]
    assert not {n for n in plain if n == "n" or n.startswith("n_")}
    light = "http://light/v1"
    fb = {"base_url": url, "light_base_url": light}
    assert needs_of("fb_rag", FBRagContext(**fb, samples=3))[light] >= {"n", "n_3"}
    assert "n_5" not in needs_of("fb_rag", FBRagContext(**fb, samples=3))[light]
    apart = needs_of("fb_rag", FBRagContext(**fb, separate_requests=True)).get(light, set())
    assert not {n for n in apart if n == "n" or n.startswith("n_")}
    assert light not in needs_of("op_rag", FBRagContext(**fb))


def test_lexsim_on_llama_server_s_slots_is_refused_before_its_first_question(capsys):
    b = Backend(owned_by="llamacpp", slots=5)
    with backend(b) as url:
        assert cli.main(["ask", "--method", "gate_lexsim", "--base-url", url, QUESTION]) == 2
        line = error_line(capsys)
        assert line.startswith(f"activerag: error: method gate_lexsim needs n >= 10 (samples "
                               f"in one request), which the server at {url} lacks (n: it takes "
                               "at most 5 in one request")
        assert "gate_lexsim" not in works(line) and "flare" in works(line)
        assert only_probed(b)
        assert cli.main(["ask", "--method", "gate_lexsim", "--lexsim-samples", "5",
                         "--base-url", url, QUESTION]) == 0
    assert max(body.get("n", 1) for _, body in b.requests) == 5
