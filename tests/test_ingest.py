import json

import pytest

from activerag.errors import CorpusError
from activerag.stores.bm25 import BM25Store
from activerag.stores.corpus import Corpus
from activerag.stores.documents import ReadReport, passage_id, read_corpus, split_passages


def test_ids_are_content_hashes():
    assert passage_id("T", "text") == passage_id("T", "text")
    assert passage_id("T", "text") != passage_id("U", "text")
    assert len(passage_id("T", "text")) == 20


def test_long_texts_split_between_sentences():
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    parts = split_passages(text, max_words=20)
    assert all(len(p.split()) <= 20 for p in parts)
    assert " ".join(parts) == text
    assert all(p.endswith(".") for p in parts)


def test_readers_and_malformed_rows(tmp_path):
    (tmp_path / "a.jsonl").write_text(
        '{"title": "A", "text": "Alpha text."}\nnot json\n{"title": "B"}\n[1, 2]\n'
        '{"contents": "Gamma text."}\n')
    (tmp_path / "b.tsv").write_text("id\ttext\ttitle\n1\tBeta text.\tB\n2\n3\t\tC\n")
    (tmp_path / "c.md").write_text("# Delta\n\nDelta body.\n\nMore delta.\n")
    (tmp_path / "d.json").write_text(json.dumps([{"title": "E", "text": "Eps."}, 5]))
    report = ReadReport()
    docs = list(read_corpus(tmp_path, report=report))
    got = sorted((d.metadata["title"], d.page_content) for d in docs)
    assert got == [("", "Gamma text."), ("A", "Alpha text."), ("B", "Beta text."),
                   ("Delta", "Delta body."), ("Delta", "More delta."), ("E", "Eps.")]
    assert report.skipped == 6
    assert any("not JSON" in p for p in report.problems)


def test_dpr_tsv_without_header(tmp_path):
    (tmp_path / "x.tsv").write_text("7\tSome text.\tTitle X\n8\tMore text.\tTitle Y\n")
    docs = list(read_corpus(tmp_path / "x.tsv"))
    assert [(d.metadata["title"], d.page_content) for d in docs] == [
        ("Title X", "Some text."), ("Title Y", "More text.")]


def test_empty_or_missing_corpus_is_refused(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(CorpusError, match="no usable passages"):
        Corpus(tmp_path / "store").ingest(tmp_path / "empty.jsonl", dense=False, progress=False)
    with pytest.raises(CorpusError, match="does not exist"):
        Corpus(tmp_path / "store").ingest(tmp_path / "nope.jsonl", dense=False, progress=False)
    (tmp_path / "x.csv").write_text("a,b")
    with pytest.raises(CorpusError, match="not one of"):
        Corpus(tmp_path / "store").ingest(tmp_path / "x.csv", dense=False, progress=False)


def test_ingesting_twice_adds_nothing_and_bm25_persists(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"title": f"T{i}", "text": f"Fact {i} about river {i}."})
                           + "\n" for i in range(5)))
    corpus = Corpus(tmp_path / "store")
    first = corpus.ingest(src, dense=False, progress=False, punkt_min_words=1)
    second = corpus.ingest(src, dense=False, progress=False, punkt_min_words=1)
    assert (first.added_bm25, second.added_bm25, second.total) == (5, 0, 5)
    assert (tmp_path / "store" / "punkt.json").exists()
    assert "Punkt trained on the corpus's 25 words" in first.summary()
    assert second.splitter == ""  # nothing added: nothing retrained
    reopened = BM25Store(tmp_path / "store" / "bm25")
    assert len(reopened) == 5
    top, score = reopened.search("river 3", 1)[0]
    assert top.metadata["title"] == "T3" and score > 0
    (tmp_path / "more.jsonl").write_text(json.dumps({"title": "M", "text": "Five words are "
                                                                             "here now."}) + "\n")
    third = corpus.ingest(tmp_path / "more.jsonl", dense=False, progress=False, punkt_min_words=1)
    assert third.splitter == "Punkt trained on the corpus's 30 words"  # retrained with them


def test_bm25_ranks_by_term_overlap_and_skips_zero_scores():
    from activerag.stores.documents import make_document

    store = BM25Store()
    store.add([make_document("cats purr softly", "a"), make_document("dogs bark loudly", "b"),
               make_document("birds sing", "c")])
    assert [d.metadata["title"] for d, _ in store.search("loud dogs bark", 3)] == ["b"]
    assert store.search("the", 3) == []


def test_bm25_returns_matches_whose_okapi_idf_is_zero():
    from activerag.stores.documents import make_document

    store = BM25Store()
    store.add([make_document("alpha beta", "a"), make_document("alpha gamma", "b"),
               make_document("delta", "c"), make_document("epsilon", "d")])
    # "alpha" is in half the passages: its Okapi idf is 0, yet both passages match
    assert sorted(d.metadata["title"] for d, _ in store.search("alpha", 4)) == ["a", "b"]


def test_splitter_is_loaded_once_and_renewed_by_an_ingest_that_retrains(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"title": "T", "text": "Fact one. Fact two."}) + "\n")
    corpus = Corpus(tmp_path / "store")
    before = corpus.splitter()
    assert corpus.splitter() is before
    corpus.ingest(src, dense=False, progress=False)
    after = corpus.splitter()
    assert after is not before and corpus.splitter() is after


def test_jsonl_rows_that_are_not_utf8_are_skipped_and_counted(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(
        b'{"title": "A", "text": "Alpha text."}\n{"text": "caf\xe9"}\n'
        b'{"title": "B", "text": "B\xc3\xa9ta text."}\n')
    report = ReadReport()
    docs = list(read_corpus(tmp_path / "a.jsonl", report=report))
    assert [d.page_content for d in docs] == ["Alpha text.", "B\u00e9ta text."]
    assert (report.rows, report.skipped) == (2, 1)
    assert report.problems[0].startswith(
        "a.jsonl:2: the row is not valid UTF-8 (byte 0xe9 at column 14) and was skipped")
    assert "iconv -f WINDOWS-1252 -t UTF-8 a.jsonl" in report.problems[0]


def test_tsv_rows_that_are_not_utf8_are_skipped_and_counted(tmp_path):
    (tmp_path / "b.tsv").write_bytes(
        b"id\ttext\ttitle\n1\tBeta text.\tB\n2\tNa\xefve text.\tC\n3\tGamma text.\tG\n")
    (tmp_path / "dpr.tsv").write_bytes(b"7\tCaf\xe9 text.\tX\n8\tMore text.\tY\n")
    report = ReadReport()
    docs = list(read_corpus(tmp_path, report=report))
    assert [(d.metadata["title"], d.page_content) for d in docs] == [
        ("B", "Beta text."), ("G", "Gamma text."), ("Y", "More text.")]
    assert report.skipped == 2
    assert [p.split(": ")[0] for p in report.problems] == ["b.tsv:3", "dpr.tsv:1"]
    assert all("not valid UTF-8" in p for p in report.problems)


def test_text_blocks_that_are_not_utf8_are_skipped_and_counted(tmp_path):
    (tmp_path / "c.md").write_bytes(
        b"# Title\n\nGood block.\n\nFine start\nbad \xff end.\n\nLast block.\n")
    report = ReadReport()
    docs = list(read_corpus(tmp_path / "c.md", report=report))
    assert [(d.metadata["title"], d.page_content) for d in docs] == [
        ("Title", "Good block."), ("Title", "Last block.")]
    assert report.skipped == 1
    assert report.problems[0].startswith(
        "c.md:6: the block is not valid UTF-8 (byte 0xff at column 5)")


def test_a_json_corpus_that_is_not_utf8_is_refused(tmp_path):
    (tmp_path / "d.json").write_bytes(b'[{"title": "E", "text": "Eps."},\n {"text": "caf\xe9"}]')
    with pytest.raises(CorpusError, match=r"d.json is not valid UTF-8 \(byte 0xe9 on line 2\)"
                                          r".*iconv"):
        list(read_corpus(tmp_path / "d.json"))


def test_a_folder_ingest_skips_an_unreadable_json_file_and_goes_on(tmp_path):
    (tmp_path / "a.json").write_bytes(b'[{"title": "E", "text": "caf\xe9"}]')
    (tmp_path / "b.jsonl").write_text(json.dumps({"title": "L", "text": "The lake is deep."}))
    report = ReadReport()
    docs = list(read_corpus(tmp_path, report=report))
    assert [d.metadata["title"] for d in docs] == ["L"]
    assert report.skipped == 1
    assert report.problems[0].startswith("a.json: the whole file was skipped:")
    assert "not valid UTF-8" in report.problems[0]


def test_ingesting_a_file_with_a_bad_row_keeps_what_the_store_holds(tmp_path):
    first = tmp_path / "first.jsonl"
    first.write_text("".join(json.dumps({"title": f"T{i}", "text": f"Fact {i} about river {i}."})
                             + "\n" for i in range(3)))
    second = tmp_path / "second.jsonl"
    second.write_bytes(b'{"title": "L", "text": "The lake is deep."}\n'
                       b'{"title": "X", "text": "caf\xe9 au lait"}\n')
    corpus = Corpus(tmp_path / "store")
    corpus.ingest(first, dense=False, progress=False)
    report = corpus.ingest(second, dense=False, progress=False)
    assert (report.added_bm25, report.skipped, report.total) == (1, 1, 4)
    assert "second.jsonl:2: the row is not valid UTF-8" in report.summary()
    reopened = BM25Store(tmp_path / "store" / "bm25")
    assert sorted(d.metadata["title"] for d in reopened.docs) == ["L", "T0", "T1", "T2"]
    assert reopened.search("river 1", 1)[0][0].metadata["title"] == "T1"
    assert reopened.search("lake", 1)[0][0].metadata["title"] == "L"


def test_a_line_cut_short_by_a_kill_is_dropped_and_ingesting_again_completes(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"Passage {i} text."}) + "\n"
                              for i in range(3)))
    whole = Corpus(tmp_path / "store")
    whole.ingest(corpus, dense=False, progress=False)
    whole.bm25.close()
    file = tmp_path / "store" / "bm25" / "docs.jsonl"
    full = file.read_bytes()
    file.write_bytes(full[:-15])  # killed while writing the third line
    opened = BM25Store(file.parent)
    assert [d.metadata["title"] for d in opened.docs] == ["T0", "T1"]
    assert file.read_bytes() == full[:-15]  # a reader leaves it to the next writer
    report = Corpus(tmp_path / "store").ingest(corpus, dense=False, progress=False)
    assert report.added_bm25 == 1 and file.read_bytes() == full
    assert len(BM25Store(file.parent)) == 3


def test_damage_before_the_last_line_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "docs.jsonl").write_text('{"id": "a", "text": "x"}\nnot json\n'
                                         '{"id": "b", "text": "y"}\n')
    with pytest.raises(CorpusError, match="docs.jsonl:2 is damaged.*ingest again"):
        BM25Store(tmp_path)


def _corpus_file(tmp_path, words_each: int, n: int):
    src = tmp_path / "c.jsonl"
    text = " ".join(["word"] * (words_each - 1))
    src.write_text("".join(json.dumps({"title": f"T{i}", "text": f"{text} end{i}."}) + "\n"
                           for i in range(n)))
    return src


def test_punkt_learns_only_from_a_corpus_of_enough_words(tmp_path):
    store = tmp_path / "store"
    small = Corpus(store).ingest(_corpus_file(tmp_path, 10, 4), dense=False, progress=False,
                                 punkt_min_words=41)
    assert not (store / "punkt.json").exists()
    assert "40 words are too few for Punkt to learn from (it is trained from 41)" in (
        small.summary())
    (tmp_path / "more.jsonl").write_text(json.dumps({"title": "M", "text": "One more."}) + "\n")
    grown = Corpus(store).ingest(tmp_path / "more.jsonl", dense=False, progress=False,
                                 punkt_min_words=42)  # exactly the minimum
    assert (store / "punkt.json").exists()
    assert grown.splitter == "Punkt trained on the corpus's 42 words"


def test_a_store_trained_before_the_minimum_drops_what_it_learned_on_the_next_ingest(tmp_path):
    store, src = tmp_path / "store", _corpus_file(tmp_path, 10, 4)
    corpus = Corpus(store)
    corpus.ingest(src, dense=False, progress=False, punkt_min_words=1)
    trained = corpus.splitter()
    assert (store / "punkt.json").exists()
    report = corpus.ingest(src, dense=False, progress=False, punkt_min_words=100)
    assert report.added_bm25 == 0 and not (store / "punkt.json").exists()
    assert "untrained Punkt" in report.summary()
    assert corpus.splitter() is not trained


def test_the_demo_store_splits_the_demo_corpus_at_every_sentence_end(tmp_path):
    """The demo corpus taught a trained Punkt "there", "long", "poet" and "toys" as
    abbreviations and "1690. About" as a collocation; its store splits each of its own sentences
    and an answer that follows one."""
    import re

    from activerag.demo import DEMO_CORPUS

    corpus = Corpus(tmp_path / "demo")
    corpus.ingest(DEMO_CORPUS, dense=False, progress=False)
    splitter = corpus.splitter()
    ends = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")  # the corpus holds no abbreviation
    for doc in corpus.bm25.docs:
        assert splitter.split(doc.page_content) == ends.split(doc.page_content), doc.page_content
    assert splitter.split("About 661,000 people live there. So the answer is Kelmor.") == [
        "About 661,000 people live there.", "So the answer is Kelmor."]
