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


def test_no_is_an_abbreviation_only_before_a_number():
    splitter = SentenceSplitter()
    assert splitter.split("So the answer is no. So the answer is no.") == [
        "So the answer is no.", "So the answer is no."]
    assert splitter.split("He was ranked No. 3 in the world. So") == [
        "He was ranked No. 3 in the world.", "So"]
    assert splitter.split("So the answer is Coolie No. 1. Then") == [
        "So the answer is Coolie No. 1.", "Then"]
    # a number on the next line stays apart
    assert splitter.split("It is no.\n3 more") == ["It is no.", "3 more"]


def test_the_fingerprint_covers_every_learned_parameter():
    from nltk.tokenize.punkt import PunktParameters

    plain, cased = PunktParameters(), PunktParameters()
    cased.ortho_context["both"] = 2
    assert SentenceSplitter(plain).fingerprint != SentenceSplitter(cased).fingerprint
    assert SentenceSplitter(PunktParameters()).fingerprint == SentenceSplitter().fingerprint
