"""Passage ids, documents and passage cutting, as pure functions."""

from activerag.stores.documents import make_document, passage_id, split_passages


def test_a_passage_id_is_a_stable_hash_of_title_and_text():
    # ids are stored in the indexes: they must not change between versions
    assert passage_id("T", "text") == "acac3d8243f82ad306e5"
    assert passage_id("", "t") == "7aefdb613d76fbf9a513"
    assert passage_id("T", "text") != passage_id("text", "T")


def test_a_document_carries_its_id_title_and_source():
    doc = make_document("Alpha text.", "A", "a.jsonl")
    assert doc.page_content == "Alpha text."
    assert doc.id == passage_id("A", "Alpha text.")
    assert doc.metadata == {"id": doc.id, "title": "A", "source": "a.jsonl"}
    bare = make_document("t")
    assert bare.id == "7aefdb613d76fbf9a513"
    assert bare.metadata == {"id": "7aefdb613d76fbf9a513", "title": "", "source": ""}


def test_a_short_text_is_one_passage_with_its_spaces_collapsed():
    assert split_passages("  a   b\n c  ") == ["a b c"]
    assert split_passages(" \n ") == []
    assert split_passages("") == []
    assert split_passages("a b. c d.", max_words=4) == ["a b. c d."]


def test_the_default_passage_holds_120_words():
    words = [f"w{i}" for i in range(121)]
    assert split_passages(" ".join(words[:120])) == [" ".join(words[:120])]
    assert split_passages(" ".join(words)) == [" ".join(words[:120]), "w120"]


def test_sentences_fill_a_passage_up_to_max_words():
    text = "a b. c d. e f. g h."
    assert split_passages(text, max_words=4) == ["a b. c d.", "e f. g h."]
    assert split_passages(text, max_words=5) == ["a b. c d.", "e f. g h."]
    assert split_passages(text, max_words=6) == ["a b. c d. e f.", "g h."]
    assert split_passages("a b c. d. e f g.", max_words=4) == ["a b c. d.", "e f g."]


def test_a_sentence_longer_than_a_passage_is_cut_into_word_runs():
    text = "A b. c d e f g h i. j k."
    assert split_passages(text, max_words=3) == ["A b.", "c d e", "f g h", "i.", "j k."]
    assert split_passages("c d e f g h i.", max_words=3) == ["c d e", "f g h", "i."]
    assert split_passages("a b c d e f.", max_words=3) == ["a b c", "d e f."]
