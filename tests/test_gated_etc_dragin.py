"""ETC (Li et al. 2026) and DRAGIN-lite (after Su et al. 2024) in FLARE's graph: the entropy
trend and RIND-without-attention as pure functions, and where each fires in a scripted draft,
what it keeps of it, and what DRAGIN-lite asks."""

from __future__ import annotations

import math

import pytest
from langgraph.runtime import Runtime
from test_gated import TopsLM, uniform

from activerag import trigger_names
from activerag.context import FlareContext
from activerag.errors import SettingError
from activerag.graphs.gated import build_dragin_graph, build_etc_graph
from activerag.nodes import triggers
from activerag.nodes.gated import logic as gl
from activerag.nodes.gated import triggers as word_triggers
from activerag.nodes.gated.context import DraginContext, EtcContext
from activerag.nodes.gated.steps import dragin_gate, etc_gate
from activerag.sentences import SentenceSplitter
from activerag.testing import ScriptedLM, ends, memory_retriever, sentence

QUESTION = "Which company did Alpha Beta found?"
DRAFT = "Alpha Beta founded Gepu Works in 1950."  # 7 tokens, one per word


def binary(p: float) -> tuple[float, ...]:
    """Top logprobs of a position split p / 1 - p: entropy H(p)."""
    return (math.log(p), math.log(1 - p))


RISING = [binary(0.98), binary(0.95), binary(0.93), uniform(8), binary(0.98), binary(0.98),
          binary(0.98)]
"""The draft's entropies: 0.098, 0.199, 0.253, then 2.079 at token 3 (" Gepu"), then low."""


def retriever():  # type: ignore[no-untyped-def]
    return memory_retriever({"Alpha Beta": "Alpha Beta founded Kelmor Works in 1950.",
                             "Gepu": "Gepu is a small town."}, k=1)


# --- ETC, pure -------------------------------------------------------------------------------


def test_the_trend_differences_content_words_and_smooths_the_second_difference():
    h = [0.1, 5.0, 0.2, 0.3, 2.0]  # word 1 is a function word: skipped, whatever its entropy
    trend = gl.entropy_trend(h, [True, False, True, True, True], alpha=0.9)
    assert trend.first == pytest.approx([None, None, 0.1, 0.1, 1.7])
    assert trend.second == pytest.approx([None, None, None, 0.0, 1.6])
    # Δ²H = 0 first: both distances 0, w = 1, M = Δ²H; then E = 0.8, w = 0.8 / 1.6, a = 0.95
    assert trend.smoothed == pytest.approx([None, None, None, 0.0, 0.95 * 1.6])
    assert gl.etc_fires_at(trend.smoothed, 1.3) == 4
    assert gl.etc_fires_at(trend.smoothed, 1.6) is None


def test_the_smoothing_weighs_the_previous_second_difference_by_its_distance_to_the_mean():
    trend = gl.entropy_trend([0.0, 1.0, 1.5, 3.5], [True] * 4, alpha=0.9)
    assert trend.second == pytest.approx([None, None, -0.5, 1.5])
    # E = 0.5: |Δ²H - E| = 1.0, |Δ²H_prev - E| = 1.0, w = 0.5, a = 0.95
    assert trend.smoothed == pytest.approx([None, None, -0.5, 0.95 * 1.5 + 0.05 * -0.5])
    plain = gl.entropy_trend([0.0, 1.0, 1.5, 3.5], [True] * 4, alpha=1.0)
    assert plain.smoothed == pytest.approx(plain.second)


def test_a_sharp_fall_fires_only_when_the_magnitude_is_compared():
    falling = gl.entropy_trend([0.0, 1.0, 2.1, 0.0], [True] * 4).smoothed
    assert gl.etc_fires_at(falling, 1.3) is None
    assert gl.etc_fires_at(falling, 1.3, absolute=True) == 3


def test_words_are_joined_tokens_and_content_words_are_no_stopwords():
    tokens = [("Kel", 0.9, 0), ("mor", 0.9, 3), (" Works", 0.9, 6), (".", 0.9, 12)]
    spans = gl.word_spans(tokens)
    assert spans == [range(0, 2), range(2, 4)]
    assert gl.word_texts(tokens, spans) == ["Kelmor", "Works."]
    assert gl.per_word([0.1, 0.7, 0.2, 0.4], spans, max) == [0.7, 0.4]
    assert gl.per_word([0.1, 0.7, 0.2, 0.4], spans, gl.mean) == pytest.approx([0.4, 0.3])
    stop = gl.BUILT_IN_STOPWORDS
    assert [gl.is_content(w, stop) for w in ("The", "in", "1950.", "Kelmor,", "—", "")] == [
        False, False, True, True, False, False]


def test_stopwords_are_nltks_when_installed_else_the_built_in_list(monkeypatch):
    import nltk.corpus

    class Missing:
        def words(self, lang):  # type: ignore[no-untyped-def]
            raise LookupError("Resource stopwords not found")

    class Installed:
        def words(self, lang):  # type: ignore[no-untyped-def]
            return ["The", "of"]

    gl.stopwords.cache_clear()
    monkeypatch.setattr(nltk.corpus, "stopwords", Missing())
    assert gl.stopwords() is gl.BUILT_IN_STOPWORDS
    gl.stopwords.cache_clear()
    monkeypatch.setattr(nltk.corpus, "stopwords", Installed())
    assert gl.stopwords() == frozenset({"the", "of"})
    gl.stopwords.cache_clear()


# --- DRAGIN-lite, pure ---------------------------------------------------------------------


def test_rind_lite_scores_content_words_by_their_entropy_alone():
    assert gl.rind_lite([0.4, 2.5, 1.2], [True, False, True]) == [0.4, 0.0, 1.2]
    assert gl.first_above([0.4, 0.0, 1.2, 3.0], 1.0) == 2
    assert gl.first_above([0.4, 1.0], 1.0) is None  # strictly above


def test_the_query_words_are_the_most_surprising_content_words_in_text_order():
    words = ["Alpha", "Beta", "was", "born", "in", "Kelmor"]
    surprisal = [0.5, 2.0, 3.0, 0.5, 4.0, 1.0]
    content = [True, True, False, True, False, True]
    assert gl.surprising_words(words, surprisal, content, 2) == ["Beta", "Kelmor"]
    assert gl.surprising_words(words, surprisal, content, 3) == ["Alpha", "Beta", "Kelmor"]
    assert gl.surprising_words(words, surprisal, content, 0) == []
    assert gl.join_query(" Where? ", ["Beta"]) == "Where? Beta"
    assert gl.surprisal(math.exp(-2.0)) == pytest.approx(2.0)


# --- the triggers and gates over a draft -----------------------------------------------------


def draft_state(draft: str, tops: list[tuple[float, ...]]) -> dict:
    tokens = [(t, p, draft.index(t)) for t, p in sentence(draft)]
    return {"step": {"draft": draft, "tokens": tokens, "tops": tops}}


def test_a_draft_whose_entropies_rise_at_token_3_fires_etc_at_3():
    state = draft_state(DRAFT, RISING)
    fire = word_triggers.etc_check(state["step"]["tokens"], state, EtcContext())
    assert fire.at == 3 and fire.words[3] == "Gepu" and fire.keep == "Alpha Beta founded"
    ents = [triggers.entropy(t) for t in RISING]
    d2 = (ents[3] - ents[2]) - (ents[2] - ents[1])
    assert fire.values[3] == pytest.approx(0.95 * d2 + 0.05 * ((ents[2] - ents[1])
                                                                - (ents[1] - ents[0])))
    update = etc_gate(state, Runtime(context=EtcContext()))
    assert update["step"]["fire"] is True and update["step"]["keep"] == "Alpha Beta founded"
    assert update["step"]["why"]["at"] == 3 and update["step"]["why"]["word"] == "Gepu"
    # a threshold above the trend: no retrieval, the draft stands whole
    calm = etc_gate(state, Runtime(context=EtcContext(etc_threshold=2.0)))["step"]
    assert calm["fire"] is False and "keep" not in calm
    # the closest it came: the bounce after the fall, at "1950."
    assert calm["why"]["value"] == pytest.approx(max(v for v in fire.values if v is not None))
    assert calm["why"]["value"] == pytest.approx(fire.values[6])


def test_etc_reads_the_trend_where_dragin_lite_reads_the_level():
    state = draft_state(DRAFT, [uniform(8)] * 7)  # unsure throughout, not rising
    tokens = state["step"]["tokens"]
    assert word_triggers.etc(tokens, state, FlareContext()) is False
    assert word_triggers.dragin_lite(tokens, state, FlareContext()) is True
    assert word_triggers.dragin_check(tokens, state, FlareContext()).at == 0


def test_dragin_lite_never_fires_on_a_function_word():
    tops = [binary(0.98)] * 5 + [uniform(16), binary(0.98)]  # " in" at 2.77 nats
    state = draft_state(DRAFT, tops)
    assert word_triggers.dragin_check(state["step"]["tokens"], state, DraginContext()).at is None
    assert word_triggers.etc_check(state["step"]["tokens"], state, EtcContext()).at is None


def test_dragin_lites_gate_keeps_the_draft_before_the_word_only_when_truncating_there():
    state = draft_state(DRAFT, [binary(0.98)] * 3 + [uniform(8)] + [binary(0.98)] * 3)
    word = dragin_gate(state, Runtime(context=DraginContext()))["step"]
    assert word["fire"] is True and word["keep"] == "Alpha Beta founded"
    assert word["why"]["at"] == 3 and word["why"]["value"] == pytest.approx(math.log(8))
    whole = dragin_gate(state, Runtime(context=DraginContext(dragin_truncate="sentence")))
    assert whole["step"]["fire"] is True and "keep" not in whole["step"]


def test_the_word_triggers_are_registered_and_ask_for_alternatives():
    assert trigger_names.TOP_LOGPROBS["etc"] == trigger_names.TOP_LOGPROBS["dragin_lite"] == 20
    assert triggers.top_logprobs_for(EtcContext()) == 20
    assert triggers.top_logprobs_for(DraginContext()) == 20
    state = draft_state(DRAFT, RISING)
    assert triggers.trigger_gate(state, Runtime(context=FlareContext(trigger="etc")))["step"] == {
        "fire": True}
    assert etc_gate({"step": {"draft": " "}}, Runtime(context=EtcContext())) == {
        "step": {"fire": False}}


def test_the_contexts_refuse_what_cannot_run():
    with pytest.raises(SettingError, match="etc_alpha must lie in"):
        EtcContext(etc_alpha=1.5)
    with pytest.raises(SettingError, match="dragin_query_words must be at least 0"):
        DraginContext(dragin_query_words=-1)


# --- the graphs --------------------------------------------------------------------------------


async def test_flare_etc_keeps_the_draft_before_the_fired_word_and_continues_it():
    lm = TopsLM(ScriptedLM([ends(DRAFT), ends(" Kelmor Works in 1950.")]), [RISING, [()]])
    graph = build_etc_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION},
                              context=EtcContext(initial_retrieval=False))
    [step] = out["trace"]
    assert step["retrieved"] is True and step["why"]["at"] == 3
    assert step["queries"] == [DRAFT]  # FLARE's masked query: no token below beta
    assert out["answer"] == "Alpha Beta founded Kelmor Works in 1950."
    assert lm.lm.prompts[1].endswith("Alpha Beta founded")  # continued from the kept words
    assert "Alpha Beta founded Kelmor Works in 1950." in lm.lm.prompts[1]  # over the documents
    assert out["answer_tokens"] == 3 + 4  # the kept tokens and the continuation's
    assert out["lm_calls"] == 2 and out["generated_tokens"] == 7 + 4


async def test_a_calm_draft_is_accepted_by_flare_etc():
    lm = TopsLM(ScriptedLM([ends(DRAFT)]), [[binary(0.98)]])
    graph = build_etc_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION},
                              context=EtcContext(initial_retrieval=False))
    assert out["answer"] == DRAFT and out["trace"][0]["retrieved"] is False
    assert out["trace"][0]["why"]["fired"] is False and out["lm_calls"] == 1


async def dragin_run(truncate: str, words: int) -> tuple[dict, TopsLM]:
    draft = sentence(DRAFT, low={"Beta": 0.6, "Gepu": 0.2})
    tops = [binary(0.98)] * 3 + [uniform(8)] + [binary(0.98)] * 3
    again = " Kelmor Works in 1950." if truncate == "word" else DRAFT.replace("Gepu", "Kelmor")
    lm = TopsLM(ScriptedLM([[*draft, ("<|eos|>", 1.0)], ends(again)]), [tops, [()]])
    graph = build_dragin_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    ctx = DraginContext(initial_retrieval=False, dragin_truncate=truncate,  # type: ignore[arg-type]
                        dragin_query_words=words)
    return await graph.ainvoke({"question": QUESTION}, context=ctx), lm


async def test_dragin_lite_asks_with_the_question_and_the_most_surprising_words_before():
    out, lm = await dragin_run("word", 2)
    [step] = out["trace"]
    assert step["retrieved"] is True and step["why"]["word"] == "Gepu"
    # before Gepu: Alpha (p .95), Beta (.6), founded (.95): Beta, then the earlier of the rest
    assert step["queries"] == [f"{QUESTION} Alpha Beta"]
    out, _ = await dragin_run("word", 25)
    assert out["trace"][0]["queries"] == [f"{QUESTION} Alpha Beta founded"]
    assert out["answer"] == "Alpha Beta founded Kelmor Works in 1950."
    assert lm.lm.prompts[1].endswith("Alpha Beta founded")


async def test_dragin_lite_writes_the_sentence_again_as_the_authors_code_does():
    out, lm = await dragin_run("sentence", 25)
    assert out["answer"] == "Alpha Beta founded Kelmor Works in 1950."
    assert lm.lm.prompts[1].endswith("<|im_start|>assistant\n")  # nothing of the draft kept


def test_the_gate_walks_a_draft_once_for_a_word_trigger(monkeypatch):
    # The measure carries the decision, so the trigger itself is not asked again.
    calls = []
    real = word_triggers.etc_check

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(word_triggers, "etc_check", counted)
    state = draft_state(DRAFT, RISING)
    update = triggers.trigger_gate(state, Runtime(context=FlareContext(trigger="etc")))
    assert update["step"] == {"fire": True} and update["decision"]["fire"] is True
    assert len(calls) == 1


# --- the authors' document handling (issue #37) ----------------------------------------------


@pytest.mark.parametrize("cls", [EtcContext, DraginContext])
def test_etc_and_dragin_default_to_their_authors_document_handling(cls):
    ctx = cls()
    assert (ctx.k, ctx.initial_retrieval, ctx.keep_documents) == (3, False, False)
    flare = FlareContext()
    assert (flare.k, flare.initial_retrieval, flare.keep_documents) == (2, True, True)


@pytest.mark.parametrize("name", ["flare_etc", "dragin_lite"])
def test_a_flare_context_passes_what_it_changed_and_leaves_the_authors_defaults(name):
    from activerag.graphs.registry import method

    _, ctx = method(name, FlareContext())
    assert (ctx.k, ctx.initial_retrieval, ctx.keep_documents) == (3, False, False)
    _, ctx = method(name, FlareContext(k=5, keep_documents=False, max_answer_tokens=64))
    assert (ctx.k, ctx.keep_documents, ctx.max_answer_tokens) == (5, False, 64)


async def test_flare_etcs_documents_reach_only_the_sentence_regenerated_over_them():
    # draft 1 fires at " Gepu", the sentence is continued over the documents, then draft 2 is
    # calm: its prompt is the exemplars, the question and the answer so far, with no documents
    script = [sentence(f"{DRAFT} It"), sentence(" Kelmor Works in 1950. It"), ends(" It is old.")]
    doc = "Alpha Beta founded Kelmor Works in 1950."

    async def answer(ctx: EtcContext) -> tuple[dict, TopsLM]:
        lm = TopsLM(ScriptedLM([list(s) for s in script]), [RISING, [()], [binary(0.98)]])
        graph = build_etc_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
        return await graph.ainvoke({"question": QUESTION}, context=ctx), lm

    out, lm = await answer(EtcContext())
    assert out["answer"] == f"{doc} It is old."
    first, regenerated, second = lm.lm.prompts
    assert doc not in first and "Gepu is a small town" not in first  # no retrieval before it
    assert doc in regenerated
    # the answer so far says what the document says, so look only before the question
    assert "Kelmor Works" not in second.split(QUESTION)[0]
    _, lm = await answer(EtcContext(keep_documents=True))
    assert doc in lm.lm.prompts[2].split(QUESTION)[0]  # FLARE's handling: they stay
