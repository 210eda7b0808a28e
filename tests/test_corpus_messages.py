"""What a new user meets with a wrong store or corpus path, format or extension (issue #19,
item 13b b-d)."""

import pytest

from activerag import cli
from activerag.errors import CorpusError
from activerag.stores.corpus import Corpus
from activerag.stores.documents import read_corpus


def test_a_store_folder_that_does_not_exist_is_not_called_empty(tmp_path):
    missing = tmp_path / "no such store"
    with pytest.raises(CorpusError) as caught:
        Corpus(missing).retriever()
    message = str(caught.value)
    assert "does not exist" in message and "empty" not in message
    assert f"--store '{missing}'" in message


def test_an_empty_store_names_itself_in_the_ingest_command(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    with pytest.raises(CorpusError) as caught:
        Corpus(store).retriever()
    assert f"--store {store}" in str(caught.value)


def test_an_unknown_extension_names_the_fields_a_row_needs(tmp_path, capsys):
    path = tmp_path / "corpus.csv"
    path.write_text("title,text\nAlpha,Alpha is a town.\n")
    assert cli.main(["ingest", str(path), "--no-dense", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    for needed in ("'text'", "'title'", "id, text, title", "blank lines"):
        assert needed in err, err
    # the progress bar is ended before the error, which starts a line of its own
    assert err.startswith("activerag: error: ") or "\nactiverag: error: " in err, repr(err)


def test_a_corpus_with_no_usable_rows_ends_the_progress_bar_first(tmp_path, capsys):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"body": 5}\n')
    assert cli.main(["ingest", str(path), "--no-dense", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "\nactiverag: error: " in err and "'title'" in err, repr(err)


@pytest.mark.parametrize("name", ["corpus.JSONL", "corpus.Jsonl"])
def test_extensions_are_read_whatever_their_case(tmp_path, name):
    path = tmp_path / name
    path.write_text('{"title": "Alpha", "text": "Alpha is a town."}\n')
    assert [d.page_content for d in read_corpus(path)] == ["Alpha is a town."]
    (tmp_path / "b.MD").write_text("# Beta\n\nBeta is a river.\n")
    titles = sorted(d.metadata["title"] for d in read_corpus(tmp_path))
    assert titles == ["Alpha", "Beta"]
