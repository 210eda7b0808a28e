"""`activerag ask --html` against the real SmolLM2 server: the page names the model the server
serves and its URL, times every step and the whole run, marks β and the tokens each query
masked, says whether each regenerated sentence changed, and groups the path by sentence."""

import json
import re

import pytest
from page_dom import draft_tokens, elements, having

from activerag.cli import main
from activerag.nodes.loop_logic import masked_query
from activerag.serving.running import server_models

pytestmark = pytest.mark.integration
QUESTION = "In which city was the founder of Daeselin Company born?"
BETA = 0.4


def test_the_run_page_shows_model_times_masks_changes_and_sentences(vllm_url, demo_store,
                                                                      tmp_path, capsys):
    page = tmp_path / "run.html"
    assert main(["ask", "--json", "--html", str(page), "--max-sentences", "3", "--beta",
                 str(BETA), "--base-url", vllm_url, "--store", str(demo_store), QUESTION]) == 0
    out = json.loads(capsys.readouterr().out)
    trace = out["trace"]
    fired = [step for step in trace if step["retrieved"]]
    assert fired, "SmolLM2's greedy drafts of this question fire retrieval (the test needs one)"
    html = page.read_text()
    found = elements(html)

    [servers] = having(found, "p", "servers")
    assert servers.text == f"model {server_models(vllm_url)[0]} at {vllm_url} (the LM server)"

    total = float(re.search(r"wall time (\d+\.\d\d) s", having(found, "p", "settings")[0].text)[1])
    steps = [e for e in found if e.tag == "li"]
    seconds = [float(re.fullmatch(r"\S+ (\d+\.\d\d) s", e.text)[1]) for e in steps]
    assert len(seconds) == len(steps) > 0 and 0 < sum(seconds) <= total + 0.01 * len(steps)
    # the drafts and regenerations are the LM calls: the slowest steps of a CPU server
    slowest = max(range(len(steps)), key=seconds.__getitem__)
    assert steps[slowest].attrs["data-node"] in {"draft", "regenerate"}

    groups = having(found, "div", "group")
    assert [g.attrs["data-sentences"] for g in groups] == ["0"] + ["1"] * len(trace)
    assert [g.text.split(" ·")[0] for g in having(found, "div", "glabel")] == [
        "before sentence 1", *[f"sentence {i + 1}" for i in range(len(trace))]]

    [beta] = having(found, "span", "beta")
    assert beta.text == f"β = {BETA:g}" and beta.attrs["style"] == f"left:{BETA * 100:.1f}%"
    articles = having(found, "article", "sentence")
    tokens = draft_tokens(found)
    at = 0
    for step, article in zip(trace, articles, strict=True):
        mine = tokens[at:at + len(step["draft_tokens"])]
        at += len(step["draft_tokens"])
        masked = [t.text for t in mine if "masked" in t.classes]
        if step["retrieved"]:
            # the implicit query is the draft without these tokens: those below β
            assert masked == [t for t, p in step["draft_tokens"] if p < BETA]
            query = masked_query([(t, p, 0) for t, p in step["draft_tokens"]], BETA)
            assert step["queries"] == [query or out["question"]]
            new = step["draft"].split() != step["sentence"].split()
            assert article.attrs["data-differs"] == str(new).lower()
            assert ("differs from" if new else "the same words as") in article.text
        else:
            assert masked == [] and "data-differs" not in article.attrs
    assert at == len(tokens)
