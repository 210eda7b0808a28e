"""The harness: resume after a kill gives the same summary; rescoring needs no LM; summaries
carry intervals, paired p-values, retrieval counts and groups."""

import json
import math
from dataclasses import replace

import pytest

from activerag.context import FlareContext
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import (
    TIMING_KEYS,
    Run,
    evaluate,
    rescore,
    row_of,
    summarise,
    summarise_methods,
)
from activerag.evaluation.tables import markdown_table
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.single import build_single_graph
from activerag.sentences import SentenceSplitter
from activerag.serving.cache import CachedLM
from activerag.serving.generation import Generation, Token
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document

EXAMPLES = [Example(f"q{i}", f"Where was person{i} born?", [f"city{i}"], [f"P{i}"])
            for i in range(6)]


class RuleLM:
    """Answers 'So the answer is city<i>.' for even i and 'unknown' for odd i; can fail once."""

    model = "rule"

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on
        self.calls = 0

    async def generate(self, prompt, *, max_tokens, cut=None, stop=None, logit_bias=None):
        self.calls += 1
        q = prompt.rsplit("person", 1)[1].split(" ")[0]
        if self.fail_on == q:
            self.fail_on = None
            raise RuntimeError("killed midway")
        text = f"So the answer is city{q}." if int(q) % 2 == 0 else "So the answer is unknown."
        toks, pos = [], 0
        for w in text.split(" "):
            piece = w if pos == 0 else " " + w
            toks.append(Token(piece, math.log(0.9), pos))
            pos += len(piece)
        return Generation(text, toks, True, len(toks), None, 10, prompt)

    async def token_ids(self, text):
        return [1]


def runs(lm):
    store = BM25Store()
    store.add([make_document(f"person{i} was born in city{i}.", f"P{i}") for i in range(6)])
    retriever = StoreRetriever(store=store, k=1)
    ctx = FlareContext(theta=0.5)
    return {"single": (build_single_graph(lm=lm, retriever=retriever,
                                          splitter=SentenceSplitter()), ctx),
            "flare": (build_flare_graph(lm=lm, retriever=retriever,
                                        splitter=SentenceSplitter()), ctx)}


def without_timing(summary):
    return {m: {k: v for k, v in s.items() if k not in TIMING_KEYS} for m, s in summary.items()}


async def test_resume_after_a_kill_equals_an_uninterrupted_run(tmp_path):
    whole = await evaluate(Run(tmp_path / "whole"), "t", runs(RuleLM()), EXAMPLES,
                           concurrency=1, progress=False)
    killed = Run(tmp_path / "killed")
    with pytest.raises(RuntimeError, match="killed midway"):
        await evaluate(killed, "t", runs(RuleLM(fail_on="4")), EXAMPLES, concurrency=1,
                       progress=False)
    finished_before = len(killed.rows())
    assert 0 < finished_before < 12
    lm = RuleLM()
    resumed = await evaluate(killed, "t", runs(lm), EXAMPLES, concurrency=1, progress=False)
    assert resumed["resumed_from"] == finished_before
    assert lm.calls == 12 - finished_before  # finished examples were not redone
    assert without_timing(resumed["summary"]) == without_timing(whole["summary"])
    assert whole["summary"]["single"]["em"] == pytest.approx(0.5)
    assert whole["summary"]["single"]["gold_title_recall"] == 1.0
    assert "| single |" in (tmp_path / "whole" / "summary.md").read_text()


async def test_a_run_folder_refuses_other_settings(tmp_path):
    await evaluate(Run(tmp_path), "t", runs(RuleLM()), EXAMPLES[:2], progress=False)
    with pytest.raises(Exception, match="other settings"):
        await evaluate(Run(tmp_path), "t", runs(RuleLM()), EXAMPLES[:3], progress=False)


def test_rescore_recomputes_from_stored_answers(tmp_path, monkeypatch):
    run = Run(tmp_path)
    run.start({"dataset": "t", "ids": ["q0"], "methods": ["single"], "contexts": {}})
    row = {"method": "single", "id": "q0", "answer": "So the answer is city0.",
           "retrieved_titles": [], "em": 0.0, "sentences": 1, "retrieved_sentences": 0,
           "lm_calls": 1, "prompt_tokens": 5, "generated_tokens": 5, "answer_tokens": 5,
           "retrievals": 1, "seconds": 0.1}
    run.append(row)
    (tmp_path / "summary.json").write_text(json.dumps({"dataset": "t"}))
    monkeypatch.setattr("activerag.evaluation.evaluate.load_dataset",
                        lambda name: [replace(e, group="g") for e in EXAMPLES])
    result = rescore(run)
    assert result["summary"]["single"]["em"] == 1.0
    assert run.rows()[0]["em"] == 1.0
    assert run.rows()[0]["group"] == "g"
    assert result["dataset"] == "t" and result["groups"]["g"]["single"]["n"] == 1


async def test_cache_serves_identical_requests(tmp_path):
    inner = RuleLM()
    lm = CachedLM(inner, tmp_path / "c.sqlite")
    a = await lm.generate("about person2 here", max_tokens=8)
    b = await CachedLM(inner, tmp_path / "c.sqlite").generate("about person2 here", max_tokens=8)
    assert inner.calls == 1
    assert (b.text, b.tokens, b.finished) == (a.text, a.tokens, a.finished)
    await lm.generate("about person2 here", max_tokens=9)
    assert inner.calls == 2


def row(method, qid, em, f1=None, steps=1, answer_tokens=10, group=""):
    """A stored row with the fields summaries read."""
    return {"method": method, "id": qid, "em": em, "f1": f1, "sentences": 2,
            "retrieved_sentences": 1, "lm_calls": 2, "prompt_tokens": 20, "generated_tokens": 10,
            "answer_tokens": answer_tokens, "retrievals": steps, "retrieval_steps": steps,
            "group": group, "seconds": 0.5}


def test_summary_gives_each_metric_a_bootstrap_interval():
    s = summarise([row("a", "q0", 1.0, 0.5), row("a", "q1", 1.0, 0.5)])
    assert (s["em"], s["em_ci"]) == (1.0, [1.0, 1.0])
    assert (s["f1"], s["f1_ci"]) == (0.5, [0.5, 0.5])
    # Means of [0, 1] resampled are 0, .5, 1 with probability 1/4, 1/2, 1/4.
    s = summarise([row("a", "q0", 0.0), row("a", "q1", 1.0)])
    assert (s["em"], s["em_ci"]) == (0.5, [0.0, 1.0])
    assert "f1" not in s and "f1_ci" not in s


def test_methods_are_compared_with_the_first_on_examples_paired_by_id():
    ems = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    first = [row("a", f"q{i}", em, em) for i, em in enumerate(ems)]
    same = [row("b", f"q{i}", em, em) for i, em in reversed(list(enumerate(ems)))]
    better = [row("c", f"q{i}", 1.0, 1.0) for i in range(20)]
    summary = summarise_methods(first + same + better, ["a", "b", "c"])
    assert "vs_first" not in summary["a"]
    assert summary["b"]["vs_first"] == {
        "method": "a", "n": 6, "em_diff": 0.0, "em_p": 1.0, "f1_diff": 0.0, "f1_p": 1.0}
    vs = summary["c"]["vs_first"]
    assert (vs["n"], vs["em_diff"], vs["f1_diff"]) == (6, 0.5, 0.5)
    # d = [0, 1, 0, 1, 0, 1]: three questions differ, all one way; of their 2**3 sign sets
    # only the two all-one-way ones reach |sum| = 3 (the exact sign test's 2 / 8).
    assert vs["em_p"] == vs["f1_p"] == 2 / 8
    table = markdown_table(summary)
    assert "p vs a (em / f1)" in table.splitlines()[0]
    assert "| a | 6 | 0.500 [" in table and table.splitlines()[2].endswith(" | - |")
    assert table.splitlines()[3].endswith(" | 1.000 / 1.000 |")


def test_retrieval_steps_per_question_and_per_100_tokens():
    ex = EXAMPLES[0]
    assert row_of("m", ex, {"answer": "x", "retrieval_steps": 3}, 0.1)["retrieval_steps"] == 3
    assert row_of("m", ex, {"answer": "x"}, 0.1)["retrieval_steps"] == 0
    s = summarise([row("a", "q0", 1.0, steps=1, answer_tokens=10),
                   row("a", "q1", 0.0, steps=3, answer_tokens=30)])
    assert s["retrieval_steps"] == 4
    assert s["retrievals_per_question"] == 2.0
    assert s["retrievals_per_100_tokens"] == 10.0
    assert s["retrieval_rate"] == 0.5  # 2 of 4 sentences
    header = markdown_table({"a": s}).splitlines()[0]
    assert "retrievals_per_question" in header and "retrievals_per_100_tokens" in header


def test_sweep_table_shows_intervals_and_retrieval_counts():
    from activerag.evaluation.sweeps import table

    s = summarise([row("a", "q0", 0.0), row("a", "q1", 1.0)])
    result = {"dataset": "t", "n": 2, "context": {"model": "", "k": 2, "retriever": "bm25",
                                                  "prompt_set": "default"}}
    text = table("theta", [("theta=0.5", 0.5, s)], result)
    assert "| retrieval_rate | retrievals_per_question | retrievals_per_100_tokens |" in text
    assert "| theta=0.5 | 0.500 [0.000, 1.000] |" in text


async def test_groups_get_their_own_summaries_and_tables(tmp_path):
    grouped = [replace(e, group="one-hop" if i % 2 == 0 else "two-hop")
               for i, e in enumerate(EXAMPLES)]
    result = await evaluate(Run(tmp_path), "t", runs(RuleLM()), grouped, progress=False)
    assert sorted(result["groups"]) == ["one-hop", "two-hop"]
    assert result["groups"]["one-hop"]["single"]["em"] == 1.0  # RuleLM knows the even ones
    assert result["groups"]["two-hop"]["flare"]["em"] == 0.0
    assert result["groups"]["two-hop"]["flare"]["n"] == 3
    assert result["summary"]["single"]["n"] == 6
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("| method |")
    assert md.index("### one-hop (n=3)") < md.index("### two-hop (n=3)")
    ungrouped = await evaluate(Run(tmp_path / "plain"), "t", runs(RuleLM()), EXAMPLES,
                               progress=False)
    assert "groups" not in ungrouped
    assert "###" not in (tmp_path / "plain" / "summary.md").read_text()


async def test_resume_after_a_half_written_line_loses_no_row(tmp_path):
    whole = await evaluate(Run(tmp_path / "whole"), "t", runs(RuleLM()), EXAMPLES,
                           concurrency=1, progress=False)
    lines = (tmp_path / "whole" / "examples.jsonl").read_text().splitlines()
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "config.json").write_text((tmp_path / "whole" / "config.json").read_text())
    (killed / "examples.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    lm = RuleLM()
    resumed = await evaluate(Run(killed), "t", runs(lm), EXAMPLES, concurrency=1,
                             progress=False)
    assert lm.calls == 11  # only the whole row was kept
    assert len(Run(killed).rows()) == 12
    assert resumed["summary"]["single"]["n"] == resumed["summary"]["flare"]["n"] == 6
    assert (resumed["expected"], resumed["missing"], resumed["damaged_lines"]) == (12, 0, 0)
    assert without_timing(resumed["summary"]) == without_timing(whole["summary"])
    assert not (killed / "summary.md").read_text().startswith("**WARNING")


async def test_a_whole_last_row_without_newline_is_kept(tmp_path):
    await evaluate(Run(tmp_path / "whole"), "t", runs(RuleLM()), EXAMPLES[:1], concurrency=1,
                   progress=False)
    lines = (tmp_path / "whole" / "examples.jsonl").read_text().splitlines()
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "config.json").write_text((tmp_path / "whole" / "config.json").read_text())
    (killed / "examples.jsonl").write_text(lines[0])
    lm = RuleLM()
    resumed = await evaluate(Run(killed), "t", runs(lm), EXAMPLES[:1], concurrency=1,
                             progress=False)
    assert lm.calls == 1
    assert (resumed["finished"], resumed["missing"], resumed["damaged_lines"]) == (2, 0, 0)


def test_a_short_summary_says_so(tmp_path):
    run = Run(tmp_path)
    run.start({"dataset": "t", "ids": ["q0", "q1"], "methods": ["single"], "contexts": {}})
    run.append(row("single", "q0", 1.0))
    with open(run.rows_file, "a") as fh:
        fh.write('{"method": "single", "id": "q1", "ans{"method": "single", "id": "q2"}\n')
    result = run.write_summary({"dataset": "t"})
    assert (result["expected"], result["finished"], result["missing"],
            result["damaged_lines"]) == (2, 1, 1, 1)
    assert result["summary"]["single"]["n"] == 1
    first = (tmp_path / "summary.md").read_text().splitlines()[0]
    assert first.startswith("**WARNING") and "1 of 2 rows" in first
    assert "1 line of examples.jsonl could not be read" in first


async def test_a_server_is_asked_for_counters_only_when_given_its_url(tmp_path, monkeypatch):
    asked = []
    counters = iter([{"vllm:prefix_cache_queries_total": 10, "vllm:prefix_cache_hits_total": 5},
                     {"vllm:prefix_cache_queries_total": 30, "vllm:prefix_cache_hits_total": 15}])

    def fake_counters(url):
        asked.append(url)
        return next(counters)

    monkeypatch.setattr("activerag.evaluation.evaluate.vllm_counters", fake_counters)
    quiet = await evaluate(Run(tmp_path / "a"), "t", runs(RuleLM()), EXAMPLES[:1],
                           progress=False)
    assert asked == [] and quiet["prefix_cache_hit_rate"] is None
    served = await evaluate(Run(tmp_path / "b"), "t", runs(RuleLM()), EXAMPLES[:1],
                            progress=False, metrics_url="http://server:1/v1")
    assert asked == ["http://server:1/v1"] * 2
    assert served["prefix_cache_hit_rate"] == 0.5


def test_a_longbench_row_is_scored_on_its_whole_answer_with_qa_f1():
    from activerag.evaluation.datasets import Example
    from activerag.evaluation.evaluate import score

    ex = Example("q", "Who?", ["Denise Levertov"], kind="longbench", context="Passage 1: ...")
    out = score(ex, "Denise Levertov was born earlier", [])
    assert out["em"] == 0.0 and out["f1"] == pytest.approx(2 * (2 / 5) / (2 / 5 + 1))
    assert score(ex, "denise levertov.", [])["em"] == 1.0


def test_latency_counts_cached_samples_at_what_their_draw_took():
    live = {**row("fb", "q0", 1.0), "seconds": 10.0,
            "stage_seconds": {"sample": 8.0, "generate": 2.0}}
    cached = {**row("fb", "q1", 1.0), "seconds": 2.5,
              "stage_seconds": {"sample": 0.5, "sample_drawn": 9.0, "generate": 2.0}}
    s = summarise([live, cached])
    assert s["seconds_per_question"] == 6.25
    assert s["latency_seconds"] == (10.0 + 11.0) / 2
    assert s["stage_seconds"]["sample_drawn"] == 4.5
    assert "latency_seconds" not in summarise([row("a", "q0", 1.0)])  # not a long-context run


LONG = Example("lq", "Who wrote it?", ["Ada"], kind="longbench", context="w " * 40,
               gold_spans=[(12, 15), (19, 40)])
"""A long-context question: two gold paragraphs, of 3 and 21 words."""
FB_OUT = {"answer": "Ada", "route": "fb_rag", "selected": [1], "selected_spans": [(10, 20)],
          "samples": ["Rationale: Ada wrote it. Answer: Ada", "Answer: Babbage"],
          "stage_seconds": {"sample": 1.0}}
"""FB-RAG read one 10-word chunk: all of the first gold paragraph, one word of the second."""


def test_a_long_context_row_counts_gold_words_read_not_one_word_overlaps():
    row = row_of("fb_rag", LONG, FB_OUT, 2.0)
    assert "gold_chunk_recall" not in row  # one word of a paragraph made it count as read
    assert row["gold_word_recall"] == pytest.approx(4 / 24)
    assert row["gold_half_recall"] == 0.5
    s = summarise([row])
    assert s["gold_word_recall"] == pytest.approx(4 / 24) and s["gold_half_recall"] == 0.5


def test_a_long_context_row_keeps_the_light_lms_samples_and_the_spans_read():
    row = row_of("fb_rag", LONG, FB_OUT, 2.0)
    assert row["samples"] == FB_OUT["samples"]
    assert row["selected_spans"] == [[10, 20]] and row["words_read"] == 10
    assert json.loads(json.dumps(row))["samples"] == FB_OUT["samples"]
    baseline = row_of("op_rag", LONG, {**FB_OUT, "samples": None, "route": "op_rag"}, 1.0)
    assert "samples" not in baseline  # a baseline drew none


def test_rescore_recomputes_gold_recall_from_the_spans_a_row_read(tmp_path, monkeypatch):
    run = Run(tmp_path)
    run.start({"dataset": "t", "ids": ["lq"], "methods": ["fb_rag"], "contexts": {}})
    run.append({**row_of("fb_rag", LONG, FB_OUT, 2.0), "gold_word_recall": 1.0,
                "gold_half_recall": 1.0})
    (tmp_path / "summary.json").write_text(json.dumps({"dataset": "t"}))
    monkeypatch.setattr("activerag.evaluation.evaluate.load_dataset", lambda name: [LONG])
    result = rescore(run)
    assert run.rows()[0]["gold_word_recall"] == pytest.approx(4 / 24)
    assert result["summary"]["fb_rag"]["gold_half_recall"] == 0.5


async def test_a_resumed_run_s_progress_starts_at_what_was_done_and_ends_full(tmp_path, capsys):
    killed = Run(tmp_path / "killed")
    with pytest.raises(RuntimeError, match="killed midway"):
        await evaluate(killed, "t", runs(RuleLM(fail_on="4")), EXAMPLES, concurrency=1,
                       progress=False)
    before = len(killed.rows())
    capsys.readouterr()
    await evaluate(killed, "t", runs(RuleLM()), EXAMPLES, concurrency=1, progress=True)
    bars = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines()
            if line.startswith("eval")]
    assert bars and f" {before}/12 " in bars[0], bars
    assert " 12/12 " in bars[-1], bars
