"""`activerag train-retriever` with the trainer, the LM client and the recall search stood in:
its flags reach the trainer, the LM task trains on its split's pool, and the held-out recall
table is printed and saved (recall.md, recall.json)."""

import json
from types import SimpleNamespace

import pytest
from langchain_core.documents import Document

import activerag.evaluation.datasets
import activerag.serving.token_lm
import activerag.stores.corpus
import activerag.stores.query_encoder
from activerag import cli, lsr
from activerag.evaluation.datasets import Example

pytestmark = pytest.mark.usefixtures("own_home")

TRAIN = [Example(f"t{i}", f"Where was person {i} born?", [f"City {i}"]) for i in range(3)]
HELD_OUT = [Example("h1", "Who founded Zeta?", ["Ilsa"], ["Zeta"]),
            Example("h2", "Where is Ulm?", ["Vedria"], ["Ulm"]),
            Example("h3", "Where is Gepu?", ["Orvale"], ["Gepu"])]
LOSSES = [4.0, 2.0, 3.0, 1.0]


class Tokens:
    def __init__(self, url: str, model: str) -> None:
        self.url, self.model = url, model


class Recording(lsr.Trainer):
    """The real trainer's checks, then a report of LOSSES instead of training MiniLM."""

    made: list = []

    def train(self, examples, resume=True, stop_after=None, split=None):
        kept = self.check_split(examples, split)
        self.out.mkdir(parents=True, exist_ok=True)  # where the encoder would be saved
        Recording.made.append(SimpleNamespace(config=self.config, examples=examples,
                                              resume=resume, split=split, kept=kept))
        return lsr.TrainReport(len(LOSSES), self.config.epochs, len(examples), LOSSES, 5, 1,
                               None, str(self.out))


@pytest.fixture
def stand_ins(monkeypatch):
    """A corpus of 50 passages of 60 words (3 of them dense), and the stand-ins."""
    docs = [Document(page_content=" ".join([f"w{i}"] * 60), id=f"p{i}",
                     metadata={"title": f"T{i}"}) for i in range(50)]
    corpus = SimpleNamespace(path="store", chroma=[1, 2, 3], bm25=SimpleNamespace(docs=docs))
    seeds = []

    def training_examples(n, seed):
        seeds.append(seed)
        return TRAIN[:n]

    def recall_at(store, examples, ks, encoder=None):
        hits = [1.0, 1.0] if encoder is not None else [1.0, 0.0]
        return {k: hits[: len(examples)] for k in ks}

    Recording.made = []
    monkeypatch.setattr(lsr, "Trainer", Recording)
    monkeypatch.setattr(lsr, "training_examples", training_examples)
    monkeypatch.setattr(lsr, "recall_at", recall_at)
    monkeypatch.setattr(activerag.evaluation.datasets, "twowiki", lambda: HELD_OUT)
    monkeypatch.setattr(activerag.stores.corpus, "Corpus", lambda *args: corpus)
    monkeypatch.setattr(activerag.serving.token_lm, "VLLMTokens", Tokens)
    monkeypatch.setattr(activerag.stores.query_encoder, "QueryEncoder",
                        lambda path: SimpleNamespace(index=lambda: None))
    return SimpleNamespace(docs=docs, seeds=seeds)


def train(tmp_path, *flags):
    return cli.main(["train-retriever", "--out", str(tmp_path / "enc"), "--k", "2",
                     "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *flags])


def test_the_training_flags_reach_the_trainer_and_its_losses_are_averaged_per_epoch(
        tmp_path, stand_ins, capsys):
    assert train(tmp_path, "--n", "3", "--epochs", "2", "--seed", "7", "--batch", "4",
                 "--eval-n", "2") == 0
    [run] = Recording.made
    assert (run.config.epochs, run.config.seed, run.config.batch, run.config.k) == (2, 7, 4, 2)
    assert stand_ins.seeds == [7] and run.examples == TRAIN and run.resume is True
    assert run.split is None and run.kept is None  # the QA task has no split
    out, err = capsys.readouterr()
    assert "2 epochs of batch 4; LM m at http://127.0.0.1:9/v1" in err
    assert "trained 4 steps; mean loss per epoch 3.000 -> 2.000; LM scored 5 pairs, 1 from " \
           "the cache" in out


def test_the_held_out_recall_table_is_printed_and_saved(tmp_path, stand_ins, capsys):
    assert train(tmp_path, "--n", "3", "--eval-n", "2", "--fresh") == 0
    assert Recording.made[0].resume is False
    out = capsys.readouterr().out
    table = (tmp_path / "enc" / "recall.md").read_text()
    assert table.startswith("gold-title recall@k on the first 2 2Wiki questions (held out;")
    assert table.endswith("|\n") and out.endswith(table)
    lines = table.splitlines()
    assert lines[2:4] == ["| k | MiniLM | LSR query encoder | p |", "|---|---|---|---|"]
    assert [line.split(" | ")[0] for line in lines[4:]] == ["| 1", "| 2"]
    saved = json.loads((tmp_path / "enc" / "recall.json").read_text())
    assert saved["n"] == 2 and saved["recall"]["2"]["before"] == 0.5
    assert saved["recall"]["2"]["after"] == 1.0


def test_the_lm_task_trains_on_its_split_s_pool_and_keeps_the_split(tmp_path, stand_ins, capsys):
    assert train(tmp_path, "--task", "lm", "--n", "4") == 0
    [run] = Recording.made
    pool = lsr.LMSplit().of(stand_ins.docs)[1]
    assert [e.id for e in run.examples] == [e.id for e in pool[:4]]
    assert run.split == lsr.LMSplit() and run.kept == lsr.LMSplit().record(stand_ins.docs)
    assert len(run.kept["held_out_ids"]) == 40
    out = capsys.readouterr().out
    assert "bits per byte with and without it: python -m benchmarks.quality.replug_lm" in out
    assert not (tmp_path / "enc" / "recall.md").exists()  # no held-out questions to recall


def test_one_step_per_epoch_gives_each_epoch_its_own_loss(tmp_path, stand_ins, capsys):
    assert train(tmp_path, "--n", "3", "--epochs", "4", "--eval-n", "2") == 0
    means = " -> ".join(f"{loss:.3f}" for loss in LOSSES)
    assert f"trained 4 steps; mean loss per epoch {means};" in capsys.readouterr().out
