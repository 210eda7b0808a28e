from activerag.sentences import SentenceSplitter, load_punkt, save_punkt, train_punkt


def test_first_sentence_needs_the_next_one_to_begin():
    s = SentenceSplitter()
    assert s.first_sentence_end("He was born in 1950.") is None
    assert s.first_sentence_end("He was born in 1950. He") == 20
    assert s.first_sentence_end("He was born in 1950.", final=True) == 20
    assert s.first_sentence_end("", final=True) is None


def test_line_break_ends_a_sentence():
    s = SentenceSplitter()
    assert s.spans("Step one\nStep two") == [(0, 8), (9, 17)]
    assert s.first_sentence_end("Done.\n") == 5


def test_common_abbreviations_do_not_split():
    s = SentenceSplitter()
    assert s.split("Dr. Smith met Mr. Jones in the U.S. capital. Then he left.") == [
        "Dr. Smith met Mr. Jones in the U.S. capital.", "Then he left."]


def test_trained_parameters_round_trip(tmp_path):
    text = ("The Rt. Hon. Lord spoke. " * 30) + "Rt. Hon. members agreed. It ended."
    params = train_punkt([text])
    path = tmp_path / "punkt.json"
    save_punkt(params, path)
    loaded = load_punkt(path)
    assert loaded.abbrev_types == params.abbrev_types
    assert "hon" in loaded.abbrev_types
    trained = SentenceSplitter.from_file(path)
    assert trained.split("The Rt. Hon. Lord spoke. It ended.") == [
        "The Rt. Hon. Lord spoke.", "It ended."]


def test_missing_file_falls_back_to_untrained(tmp_path):
    s = SentenceSplitter.from_file(tmp_path / "absent.json")
    assert s.split("One. Two.") == ["One.", "Two."]
