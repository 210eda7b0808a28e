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


def test_ingest_demo_fills_a_store_from_the_shipped_corpus_and_a_second_run_adds_nothing(
        tmp_path, capsys):
    """The README's first command ingests --demo: no PATH needed; ingesting it again adds no
    passage (each batch of duplicates counts 0, not 1)."""
    from activerag.stores.corpus import Corpus

    store = tmp_path / "demo"
    assert cli.main(["ingest", "--demo", "--no-dense", "--store", str(store)]) == 0
    first = len(Corpus(store).bm25)
    assert first > 40 and f"added {first} to BM25" in capsys.readouterr().out
    assert cli.main(["ingest", "--demo", "--no-dense", "--store", str(store)]) == 0
    assert len(Corpus(store).bm25) == first
    assert "added 0 to BM25 and 0 to Chroma" in capsys.readouterr().out


def test_a_corpus_that_fills_its_last_batch_exactly_counts_each_passage_once(tmp_path):
    from activerag.stores.corpus import Corpus

    source = tmp_path / "four.jsonl"
    source.write_text("".join(f'{{"title": "T{i}", "text": "Passage number {i} here."}}\n'
                              for i in range(4)))
    report = Corpus(tmp_path / "s").ingest(source, dense=False, progress=False, batch=2)
    assert (report.passages, report.added_bm25, report.added_chroma) == (4, 4, 0)
