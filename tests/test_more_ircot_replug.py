"""The end of an answer: IRCoT's reader stops at its answer sentence even when that sentence
closes the reply (and the client did not cut it there), and REPLUG streams each sentence as
soon as the next one has begun."""

from activerag.graphs.ircot import build_ircot_graph
from activerag.graphs.replug import build_replug_graph
from activerag.nodes.ircot.context import IRCoTContext
from activerag.nodes.replug.context import ReplugContext
from activerag.sentences import SentenceSplitter
from activerag.testing.retriever import memory_retriever
from activerag.testing.scripted import ScriptedLM, ends
from activerag.testing.scripted_tokens import ScriptedTokenLM, says

QUESTION = "Where was Alpha Beta born?"
PASSAGES = {"Alpha Beta": "Alpha Beta was born in Vesk.", "Alpha Move": "Alpha Beta moved to Ulm.",
            "Gepu": "Gepu is a small town."}


class Uncut(ScriptedLM):
    """A client that ignores the cut it is given (it returns the whole reply), as an LM outside
    this package may: the nodes must end the answer themselves."""

    async def generate(self, prompt, *, max_tokens, cut=None, stop=None, logit_bias=None):
        return await super().generate(prompt, max_tokens=max_tokens, stop=stop,
                                      logit_bias=logit_bias)


async def test_the_reader_s_answer_ends_at_its_answer_sentence_whatever_the_client_returns():
    read = "Alpha Beta was born in Vesk. So the answer is Vesk.\t "
    for lm in (ScriptedLM, Uncut):
        graph = build_ircot_graph(lm=lm([ends("So the answer is: Vesk."), ends(read)]),
                                  retriever=memory_retriever(PASSAGES, k=2),
                                  splitter=SentenceSplitter())
        out = await graph.ainvoke({"question": QUESTION}, context=IRCoTContext())
        assert out["answer"] == "Alpha Beta was born in Vesk. So the answer is Vesk.", lm
        [entry] = [t for t in out["trace"] if t["role"] == "read"]
        assert entry["sentence"] == out["answer"]


async def test_replug_streams_a_sentence_once_the_next_has_begun():
    lm = ScriptedTokenLM({m: says("Alpha was born in Vesk. So the answer is Vesk. Gepu is big.")
                          for m in ("Vesk", "Ulm")})
    graph = build_replug_graph(token_lm=lm, retriever=memory_retriever(PASSAGES, k=2),
                               splitter=SentenceSplitter())
    text, streamed = "", []
    ctx = ReplugContext(k=2, ensemble="token")  # one token decided per round
    async for mode, chunk in graph.astream({"question": QUESTION}, context=ctx,
                                           stream_mode=["updates", "custom"]):
        if mode == "updates":
            text = chunk.get("ensemble", {}).get("text", text)
        else:
            streamed.append((chunk["sentence"]["sentence"], text))
    # the text decided when each sentence was streamed: the first, as the second began
    assert streamed == [("Alpha was born in Vesk.", "Alpha was born in Vesk. So"),
                        ("So the answer is Vesk.", "Alpha was born in Vesk. So the answer is "
                                                   "Vesk.")]
