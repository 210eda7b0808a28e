"""One bad row costs that row only: a JSON-escaped lone surrogate and JSON nested past the
parser's depth are skipped and counted like malformed rows; a passage length below one word is
refused (issue #19, item 12)."""

import json

import pytest

from activerag import cli
from activerag.errors import ActiveRagError, CorpusError
from activerag.evaluation.datasets import read_jsonl
from activerag.stores.corpus import Corpus
from activerag.stores.documents import ReadReport, read_corpus

DEEP = "[" * 100_000 + "]" * 100_000
"""Valid JSON deeper than Python's recursion limit."""
SURROGATE = '{"title": "S", "text": "bad \\ud800 text"}'
"""Valid UTF-8 whose JSON escape decodes to a lone surrogate, which UTF-8 cannot encode."""


def read(path):
    report = ReadReport()
    docs = [(d.metadata["title"], d.page_content) for d in read_corpus(path, report=report)]
    return docs, report


def test_a_jsonl_row_with_a_lone_surrogate_is_skipped_and_counted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "text": "Alpha."}\n' + SURROGATE + "\n"
                    '{"title": "B", "text": "Beta."}\n'
                    '{"title": "T \\udc80", "text": "Title is bad."}\n')
    docs, report = read(path)
    assert docs == [("A", "Alpha."), ("B", "Beta.")]
    assert report.rows == 2 and report.skipped == 2
    assert report.problems[0].startswith("c.jsonl:2: ") and "surrogate" in report.problems[0]
    assert report.problems[1].startswith("c.jsonl:4: ")


def test_a_json_corpus_row_with_a_lone_surrogate_is_skipped_and_counted(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('[{"title": "A", "text": "Alpha."}, ' + SURROGATE + "]")
    docs, report = read(path)
    assert docs == [("A", "Alpha.")] and report.skipped == 1
    assert report.problems[0].startswith("c.json[1]: ")


def test_a_jsonl_row_nested_too_deeply_is_skipped_and_counted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(DEEP + '\n{"title": "A", "text": "Alpha."}\n')
    docs, report = read(path)
    assert docs == [("A", "Alpha.")] and report.skipped == 1
    assert report.problems[0].startswith("c.jsonl:1: ") and "nested" in report.problems[0]


def test_a_json_corpus_nested_too_deeply_is_refused(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(DEEP)
    with pytest.raises(CorpusError, match="nested"):
        read(path)


def test_a_dataset_row_nested_too_deeply_is_refused_by_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "A?", "answer": "a"}) + "\n" + DEEP + "\n")
    with pytest.raises(ActiveRagError, match=r"q\.jsonl:2 .*nested"):
        read_jsonl(path)


def test_ingest_goes_on_past_a_surrogate_row(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "text": "Alpha is a town."}\n' + SURROGATE + "\n")
    report = Corpus(tmp_path / "store").ingest(path, dense=False, progress=False)
    assert (report.rows, report.passages, report.skipped) == (1, 1, 1)


@pytest.mark.parametrize("max_words", [0, -5])
def test_a_passage_length_below_one_word_is_refused(tmp_path, max_words):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "text": "Alpha is a town."}\n')
    with pytest.raises(CorpusError, match=f"max_words must be at least 1, got {max_words}"):
        Corpus(tmp_path / "store").ingest(path, dense=False, max_words=max_words, progress=False)
    with pytest.raises(CorpusError, match="max_words"):
        list(read_corpus(path, max_words))


@pytest.mark.parametrize("max_words", ["0", "-5"])
def test_ingest_cli_refuses_max_words_below_one(tmp_path, capsys, max_words):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "text": "Alpha is a town."}\n')
    assert cli.main(["ingest", str(path), "--no-dense", "--store", str(tmp_path / "store"),
                     "--max-words", max_words]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"activerag: error: max_words must be at least 1, got {max_words}; give the passage "
        "length in words (--max-words)"]
