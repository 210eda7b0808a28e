"""REPLUG-LSR's pure parts: the loss of Eq. 5, the schedule, LM scores and their cache, recall,
the training questions kept apart from every evaluation set, and the LM task's split kept with
its encoder."""

import asyncio
import json
import math
from pathlib import Path

import pytest
import torch

from activerag import lsr
from activerag.errors import ActiveRagError, CorpusError, ModelFileMissing
from activerag.evaluation.datasets import Example


def kl(p, q):
    return sum(a * math.log(a / b) for a, b in zip(p, q, strict=True))


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


def test_loss_is_the_kl_from_the_retriever_to_the_lm_with_each_temperature():
    s, lm = [0.2, 0.1, 0.0], [-1.0, -1.5, -3.0]
    loss = lsr.lsr_loss(torch.tensor([s]), torch.tensor([lm]), gamma=0.1, beta=0.5)
    want = kl(softmax([v / 0.1 for v in s]), softmax([v / 0.5 for v in lm]))
    assert float(loss) == pytest.approx(want, rel=1e-5)


def test_reverse_direction_is_the_official_codes_kl_from_the_lm_to_the_retriever():
    s, lm = [0.2, 0.1, 0.0], [-1.0, -1.5, -3.0]
    loss = lsr.lsr_loss(torch.tensor([s]), torch.tensor([lm]), 0.1, 0.5, direction="reverse")
    want = kl(softmax([v / 0.5 for v in lm]), softmax([v / 0.1 for v in s]))
    assert float(loss) == pytest.approx(want, rel=1e-5)
    assert want != pytest.approx(kl(softmax([v / 0.1 for v in s]), softmax([v / 0.5 for v in lm])))


def test_loss_is_the_batch_mean_of_the_per_question_kls_not_a_mean_over_passages():
    rows_s = [[0.3, 0.0], [0.5, 0.5]]
    rows_lm = [[-2.0, -1.0], [-1.0, -1.0]]
    loss = lsr.lsr_loss(torch.tensor(rows_s), torch.tensor(rows_lm), 0.1, 0.1)
    first = kl(softmax([3.0, 0.0]), softmax([-20.0, -10.0]))
    # the second question's distributions agree: its KL is 0, and the mean is over 2 questions
    assert float(loss) == pytest.approx(first / 2, rel=1e-5)


def test_only_the_retriever_learns_and_it_moves_towards_the_passage_the_lm_prefers():
    s = torch.tensor([[0.3, 0.2]], requires_grad=True)
    lm = torch.tensor([[-3.0, -1.0]], requires_grad=True)
    lsr.lsr_loss(s, lm, 0.1, 0.1).backward()
    assert lm.grad is None
    assert s.grad is not None
    # the LM prefers the second passage: descending the loss raises its score, lowers the first
    assert float(s.grad[0, 1]) < 0 < float(s.grad[0, 0])


def test_warm_up_then_linear_decay():
    assert [lsr.lr_factor(i, 10, 0.2) for i in (0, 1, 2, 6, 10)] == [0.5, 1.0, 1.0, 0.5, 0.0]
    assert lsr.lr_factor(0, 10, 0.0) == 1.0


def test_lm_score_is_the_mean_or_the_sum_of_token_logprobs():
    assert lsr.lm_score([-1.0, -2.0, -4.5], "mean") == pytest.approx(-2.5)
    assert lsr.lm_score([-1.0, -2.0, -4.5], "sum") == pytest.approx(-7.5)
    with pytest.raises(ActiveRagError, match="empty answer"):
        lsr.lm_score([], "mean")


@pytest.mark.parametrize("field,value,message", [
    ("k", 1, "k >= 2"), ("gamma", 0.0, "gamma must be positive"),
    ("beta", -1.0, "beta must be positive"), ("batch", 0, "batch must be at least 1"),
    ("epochs", 0, "epochs must be at least 1"),
    ("reembed_every", -1, "reembed_every must be 0")])
def test_settings_that_cannot_train_are_refused(field, value, message):
    with pytest.raises(ActiveRagError, match=message):
        lsr.LSRConfig(**{field: value}).check()
    lsr.LSRConfig().check()


def test_title_recall_counts_each_gold_title_once():
    assert lsr.title_recall(["A", "B", "C"], ["A", "D"]) == 0.5
    assert lsr.title_recall(["A", "A"], ["A", "A", "B"]) == 0.5
    assert lsr.title_recall(["A"], []) == 0.0
    assert lsr.title_recall([], ["A"]) == 0.0


class Teacher:
    """Scores an answer by which passage its prompt holds: 'good' makes it likely."""

    model = "teacher"

    def __init__(self):
        self.scored = 0

    async def tokenize(self, text):
        return [text]

    async def score(self, prompt, continuation):
        self.scored += 1
        assert prompt[0].endswith("Answer:") and continuation == [" Paris"]
        return [-0.1, -0.3] if "good" in prompt[0] else [-2.0, -4.0]


def test_answer_logprobs_asks_the_lm_only_for_pairs_it_has_not_scored(tmp_path: Path):
    cache = lsr.ScoreCache(tmp_path / "scores.sqlite")
    lm = Teacher()
    passages = [("p1", "a good passage"), ("p2", "a bad passage")]
    values, asked = asyncio.run(lsr.answer_logprobs(lm, cache, "Capital?", "Paris ", passages))
    assert values == [[-0.1, -0.3], [-2.0, -4.0]] and asked == 2
    more = [*passages, ("p3", "another good one")]
    values, asked = asyncio.run(lsr.answer_logprobs(lm, cache, "Capital?", "Paris", more))
    assert asked == 1 and lm.scored == 3 and values[2] == [-0.1, -0.3]
    assert len(lsr.ScoreCache(tmp_path / "scores.sqlite")) == 3  # kept on disk
    lm.model = "another"
    assert asyncio.run(lsr.answer_logprobs(lm, cache, "Capital?", "Paris", passages))[1] == 2


def test_a_query_encoder_folder_that_does_not_exist_or_holds_no_model_is_refused(tmp_path):
    from activerag.stores.query_encoder import QueryEncoder

    with pytest.raises(ModelFileMissing, match="does not exist"):
        QueryEncoder(tmp_path / "nowhere")
    with pytest.raises(ModelFileMissing, match="no sentence-transformers model"):
        QueryEncoder(tmp_path)


def test_a_query_encoder_needs_the_dense_retriever(tmp_path):
    from langchain_core.documents import Document

    from activerag.stores.corpus import Corpus

    corpus = Corpus(tmp_path)
    corpus.bm25.add([Document(page_content="Paris is in France.", id="a")])
    with pytest.raises(CorpusError, match="--retriever chroma"):
        corpus.retriever("bm25", 1, query_encoder=str(tmp_path))


def test_overlap_compares_normalised_question_texts():
    train = [Example("1", "Who wrote Hamlet?", ["Shakespeare"])]
    test = [Example("2", "who wrote  hamlet", ["x"]), Example("3", "Who wrote Macbeth?", ["x"])]
    assert lsr.overlap(train, test) == 1


def test_training_questions_are_never_evaluation_questions():
    from activerag.settings import shared_data

    try:
        shared_data()
    except ActiveRagError:
        pytest.skip("../shared/data not found; set ACTIVERAG_DATA to run the data tests")
    from activerag.evaluation.datasets import twowiki

    train = lsr.training_examples()
    held = lsr.evaluation_questions()
    assert len(train) > 400
    assert not any(lsr.question_key(e.question) in held for e in train)
    assert len({lsr.question_key(e.question) for e in train}) == len(train)
    assert not {e.id for e in train} & {e.id for e in twowiki()[:lsr.HELD_OUT_2WIKI]}
    assert [e.id for e in lsr.training_examples(20, seed=3)] == \
        [e.id for e in lsr.training_examples(20, seed=3)]
    assert [e.id for e in lsr.training_examples(20, seed=3)] != \
        [e.id for e in lsr.training_examples(20, seed=4)]


def test_halves_cut_a_passage_at_its_middle_word():
    assert lsr.halves("a b c d e") == ("a b", "c d e")
    assert lsr.halves(" one  two ") == ("one", "two")


def test_lm_split_trains_on_no_title_it_evaluates():
    from langchain_core.documents import Document

    docs = [Document(page_content=" ".join(["w"] * (60 + i)), id=f"p{i}",
                     metadata={"title": f"T{i % 5}"}) for i in range(20)]
    docs.append(Document(page_content="too short", id="short", metadata={"title": "S"}))
    evaluated, train = lsr.lm_split(docs, held_out=3, seed=1)
    assert len(evaluated) == 3
    seen = {d.metadata["title"] for d in evaluated}
    assert train and all(e.gold_titles[0] not in seen for e in train)
    assert len(train) == sum(1 for d in docs[:20] if d.metadata["title"] not in seen)
    assert all(e.id != "short" for e in train)
    first = train[0]
    doc = next(d for d in docs if d.id == first.id)
    assert (first.question, first.answers[0]) == lsr.halves(doc.page_content)
    assert [d.id for d in lsr.lm_split(docs, 3, seed=1)[0]] == [d.id for d in evaluated]


def test_lm_split_by_default_evaluates_what_the_lm_benchmark_always_evaluated():
    """40 seeded picks (seed 0) among passages of 60 words or more, as results/replug-lm.md."""
    import random

    from langchain_core.documents import Document

    docs = [Document(page_content=" ".join(["w"] * (59 + i % 3)), id=f"p{i}",
                     metadata={"title": f"T{i}"}) for i in range(150)]
    long = [d for d in docs if len(d.page_content.split()) >= 60]
    want = random.Random(0).sample(long, 40)
    evaluated, train = lsr.lm_split(docs)
    assert [d.id for d in evaluated] == [d.id for d in want]
    assert len(train) == len(long) - 40
    assert [e.id for e in lsr.lm_split(docs)[1]] == [e.id for e in train]  # a seeded order


def test_lm_split_treats_untitled_passages_as_one_title_and_names_unnamed_ones():
    from langchain_core.documents import Document

    docs = [Document(page_content=f"u{i} " + " ".join(["w"] * 70)) for i in range(4)]
    docs += [Document(page_content=" ".join(["v"] * 70), id="t", metadata={"title": "T"})]
    evaluated, train = lsr.lm_split(docs, held_out=1, seed=0)
    assert not evaluated[0].metadata  # seed 0 evaluates an untitled passage
    assert [e.id for e in train] == ["t"]  # so every untitled one stays out of training
    evaluated, train = lsr.lm_split(docs[1:], held_out=1, seed=0)
    assert evaluated[0].id == "t"
    assert sorted(e.id for e in train) == sorted(lsr.halves(d.page_content)[0][:40]
                                                 for d in docs[1:4])


def test_the_smallest_settings_that_can_train_are_accepted():
    lsr.LSRConfig(k=2, batch=1, epochs=1, checkpoint_every=1).check()
    assert lsr.lr_factor(1, 2, 0.5) == 1.0  # the one decay step after a one-step warm-up


def test_overlap_counts_only_shared_questions():
    train = [Example("1", "Who wrote Hamlet?", ["x"])]
    test = [Example(str(i), q, ["x"]) for i, q in
            enumerate(["who wrote hamlet", "Who wrote Macbeth?", "Who wrote Lear?"])]
    assert lsr.overlap(train, test) == 1


def test_a_round_is_an_epoch_unless_re_embedding_cuts_it():
    # 5 steps an epoch: without re-embedding each epoch is one round
    assert [lsr.training_round(s, 5) for s in (0, 4, 5, 9)] == [
        (0, 0, 5), (0, 0, 5), (1, 5, 10), (1, 5, 10)]
    # re-embedding every 3 steps cuts rounds at 3, 6, 9 as well as at the epoch's end (5, 10)
    assert [lsr.training_round(s, 5, 3) for s in range(10)] == [
        (0, 0, 3), (0, 0, 3), (0, 0, 3), (0, 3, 5), (0, 3, 5),
        (1, 5, 6), (1, 6, 9), (1, 6, 9), (1, 6, 9), (1, 9, 10)]


def test_the_passage_index_searches_exactly_and_returns_each_passages_vector():
    from langchain_core.documents import Document

    docs = [Document(page_content=t, id=t) for t in "abcd"]
    vectors = [[1, 0], [0.6, 0.8], [0, 1], [-1, 0]]
    index = lsr.PassageIndex(docs, vectors, step=3)
    [hits] = index.search_vectors([[0.8, 0.6]], 3)
    assert [d.id for d, _, _ in hits] == ["b", "a", "c"]
    assert [round(s, 6) for _, s, _ in hits] == [0.96, 0.8, 0.6]
    assert hits[0][2].tolist() == pytest.approx([0.6, 0.8])
    assert len(index.search_vectors([[1, 0]], 10)[0]) == 4  # k above the corpus: all of it
    assert index.embeddings(["d", "a", "d"]).tolist() == [[-1, 0], [1, 0], [-1, 0]]
    assert index.step == 3 and index.vectors.dtype.name == "float32"  # half float64's memory
    # the top k of many: partitioning must put exactly the k best first
    many = lsr.PassageIndex([Document(page_content=str(i), id=str(i)) for i in range(8)],
                            [[1.0, x / 10] for x in (3, 9, 1, 7, 5, 8, 2, 6)])
    [top] = many.search_vectors([[0.0, 1.0]], 3)
    assert [d.id for d, _, _ in top] == ["1", "5", "3"]


def _own_index_encoder(tmp_path, passages):
    """A query encoder folder with its own re-embedded index of PASSAGES (2-d vectors)."""
    from langchain_core.documents import Document

    from activerag.stores.chroma import ChromaStore
    from activerag.stores.query_encoder import INDEX_FOLDER, QueryEncoder

    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "modules.json").write_text("[]")
    docs = [Document(page_content=t, id=t, metadata={"title": t}) for t in passages]
    ChromaStore(folder / INDEX_FOLDER).add_embedded(docs, [[1.0, float(i)] for i, _ in
                                                         enumerate(docs)])
    return QueryEncoder(folder), docs


def test_an_encoder_that_re_embedded_the_passages_searches_its_own_copy(tmp_path):
    from activerag.stores.chroma import ChromaStore
    from activerag.stores.query_encoder import EncodedQueryStore

    encoder, docs = _own_index_encoder(tmp_path, ["x", "y"])
    source = ChromaStore(tmp_path / "store")
    source.add_embedded(docs, [[0.0, 1.0], [1.0, 0.0]])
    store = EncodedQueryStore(source, encoder)
    assert store.chroma is not source and len(store.chroma) == 2
    assert store.chroma.embeddings(["y"])[0].tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(CorpusError, match="cannot join"):
        store.add(docs)


def test_an_encoder_whose_copy_misses_passages_the_store_has_since_gained_is_refused(tmp_path):
    from langchain_core.documents import Document

    from activerag.stores.chroma import ChromaStore
    from activerag.stores.query_encoder import EncodedQueryStore

    encoder, docs = _own_index_encoder(tmp_path, ["x", "y"])
    source = ChromaStore(tmp_path / "store")
    source.add_embedded(docs + [Document(page_content="z", id="z")], [[0.0, 1.0]] * 3)
    with pytest.raises(CorpusError, match="re-embedded 2 passages but the store now holds 3"):
        EncodedQueryStore(source, encoder).search("x", 1)


def lm_docs():
    """20 passages of 60 words, two of each title: p0 and p1 are T0, p2 and p3 T1, ..."""
    from langchain_core.documents import Document

    return [Document(page_content=" ".join(["w"] * 60), id=f"p{i}",
                     metadata={"title": f"T{i // 2}"}) for i in range(20)]


def test_the_lm_split_an_encoder_keeps_names_its_settings_and_held_out_passages():
    docs = lm_docs()
    split = lsr.LMSplit(held_out=3, seed=0)
    evaluated, pool = split.of(docs)
    assert [d.id for d in evaluated] == [d.id for d in lsr.lm_split(docs, 3, seed=0)[0]]
    assert [e.id for e in pool] == [e.id for e in lsr.lm_split(docs, 3, seed=0)[1]]
    assert split.record(docs) == {"held_out": 3, "seed": 0, "min_words": 60,
                                  "held_out_ids": ["p12", "p13", "p1"],
                                  "held_out_titles": ["T0", "T6"]}
    assert lsr.LMSplit() == lsr.LMSplit(40, 0, 60)  # what the LM benchmark evaluates by default


def test_passages_an_lm_encoder_could_train_on_are_found_by_id_and_title():
    from langchain_core.documents import Document

    docs = lm_docs()
    record = lsr.LMSplit(3, seed=0).record(docs)  # held out: p12, p13 (T6) and p1 (T0)
    pool = lsr.in_training_pool
    assert [d.id for d in pool(record, lsr.lm_split(docs, 3, seed=1)[0])] == ["p4", "p18", "p2"]
    assert [d.id for d in pool(record, lsr.lm_split(docs, 3, seed=2)[0])] == ["p2", "p18"]
    # held out, of a held-out title (training left it out) or too short to train on
    short = Document(page_content="too short", id="s", metadata={"title": "S"})
    assert pool(record, [docs[1], docs[0], docs[12], short]) == []


def encoder_folder(path, meta):
    path.mkdir(exist_ok=True)
    (path / "lsr.json").write_text(json.dumps(meta))
    return path


def test_an_lm_evaluation_overlapping_the_encoders_training_pool_is_refused(tmp_path):
    docs = lm_docs()
    folder = encoder_folder(tmp_path / "enc", {"config": {"task": "lm"},
                                               "lm_split": lsr.LMSplit(3, 0).record(docs)})
    lsr.check_held_out(folder, lsr.lm_split(docs, 3, seed=0)[0], docs)  # its own held-out ones
    with pytest.raises(ActiveRagError, match=r"3 of the 3 passages .*training pool.*"
                                             r"--n 3 --seed 0"):
        lsr.check_held_out(folder, lsr.lm_split(docs, 3, seed=1)[0], docs)


def test_an_lm_encoder_from_before_splits_were_kept_held_out_the_default_split(tmp_path):
    from langchain_core.documents import Document

    docs = [Document(page_content=" ".join(["w"] * 60), id=f"p{i}", metadata={"title": f"T{i}"})
            for i in range(150)]
    folder = encoder_folder(tmp_path / "old", {"config": {"task": "lm"}})
    lsr.check_held_out(folder, lsr.lm_split(docs)[0], docs)
    with pytest.raises(ActiveRagError, match=r"--n 40 --seed 0"):
        lsr.check_held_out(folder, lsr.lm_split(docs, 40, seed=1)[0], docs)


def test_a_qa_encoder_is_not_checked_and_one_without_its_metadata_is_refused(tmp_path):
    docs = lm_docs()
    qa = encoder_folder(tmp_path / "qa", {"config": {"task": "qa"}})
    lsr.check_held_out(qa, lsr.lm_split(docs, 3, seed=1)[0], docs)
    (tmp_path / "bare").mkdir()
    with pytest.raises(ActiveRagError, match="lsr.json"):
        lsr.check_held_out(tmp_path / "bare", lsr.lm_split(docs, 3, seed=1)[0], docs)


def test_lm_training_keeps_its_split_and_refuses_passages_the_split_holds_out(tmp_path):
    from types import SimpleNamespace

    docs = lm_docs()
    corpus = SimpleNamespace(chroma=[None] * 20, bm25=SimpleNamespace(docs=docs), path=tmp_path)
    trainer = lsr.Trainer(corpus, None, tmp_path / "enc", lsr.LSRConfig(task="lm", k=2),
                          None, progress=False)
    split = lsr.LMSplit(3, seed=0)
    assert trainer.check_split(split.of(docs)[1][:5], split) == split.record(docs)
    held = [e for e in lsr.lm_split(docs, 3, seed=1)[1] if e.id in ("p12", "p13", "p1")]
    with pytest.raises(ActiveRagError, match=r"3 training passages .*held out.*p12"):
        trainer.check_split(held, split)
    with pytest.raises(ActiveRagError, match="LMSplit"):
        trainer.check_split(split.of(docs)[1], None)
    qa = lsr.Trainer(corpus, None, tmp_path / "qa", lsr.LSRConfig(k=2), None, progress=False)
    assert qa.check_split([], None) is None
    with pytest.raises(ActiveRagError, match="needs no split"):
        qa.check_split([], split)


def test_the_corpus_retriever_with_a_query_encoder_searches_that_encoders_store(tmp_path):
    from activerag.stores.corpus import Corpus
    from activerag.stores.query_encoder import EncodedQueryStore

    encoder, docs = _own_index_encoder(tmp_path, ["x", "y"])
    corpus = Corpus(tmp_path / "store")
    corpus.bm25.add(docs)
    corpus.chroma.add_embedded(docs, [[0.0, 1.0], [1.0, 0.0]])
    retriever = corpus.retriever("chroma", 2, query_encoder=str(encoder.path))
    assert isinstance(retriever.store, EncodedQueryStore) and retriever.k == 2
    assert retriever.store.encoder.path == encoder.path
    assert corpus.retriever("chroma", 1, query_encoder=str(encoder.path)).store is retriever.store
