"""REPLUG-LSR against the real vLLM server and the real Chroma store of the demo corpus: a run
interrupted and resumed trains the same encoder as one that was not, and the trained encoder
searches the collection."""

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from activerag import lsr
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import demo
from activerag.serving.lm import VLLMClient
from activerag.serving.token_lm import VLLMTokens
from activerag.stores.corpus import Corpus
from activerag.stores.query_encoder import EncodedQueryStore

pytestmark = pytest.mark.integration
CONFIG = dict(k=4, batch=4, epochs=2, checkpoint_every=100, lr=1e-4)


@pytest.fixture(scope="module")
def trained(vllm_url, demo_store, tmp_path_factory):
    """One run straight through, one stopped after its first step and resumed."""
    lm = VLLMTokens(vllm_url, VLLMClient(vllm_url).model)
    corpus = Corpus(demo_store)
    examples = demo()[:8]
    root = tmp_path_factory.mktemp("lsr")
    cache = lsr.ScoreCache(root / "scores.sqlite")
    straight = lsr.Trainer(corpus, lm, root / "straight", lsr.LSRConfig(**CONFIG), cache,
                           progress=False).train(examples)
    stopped = lsr.Trainer(corpus, lm, root / "resumed", lsr.LSRConfig(**CONFIG), cache,
                          progress=False).train(examples, stop_after=1)
    resumed = lsr.Trainer(corpus, lm, root / "resumed", lsr.LSRConfig(**CONFIG), cache,
                          progress=False).train(examples)
    return {"root": root, "straight": straight, "stopped": stopped, "resumed": resumed,
            "corpus": corpus}


def test_a_resumed_run_trains_the_encoder_an_uninterrupted_run_trains(trained):
    straight, stopped, resumed = trained["straight"], trained["stopped"], trained["resumed"]
    assert straight.steps == 4 and stopped.steps == 1 and resumed.resumed_from == 1
    assert resumed.steps == 4
    assert resumed.losses == pytest.approx(straight.losses, rel=1e-4)
    a = SentenceTransformer(str(trained["root"] / "straight"), device="cpu")
    b = SentenceTransformer(str(trained["root"] / "resumed"), device="cpu")
    base = SentenceTransformer(str(lsr_base()), device="cpu")
    texts = ["Who founded the city?", "When was the bridge built?"]
    va, vb, v0 = (m.encode(texts, normalize_embeddings=True) for m in (a, b, base))
    assert np.allclose(va, vb, atol=1e-5)
    assert not np.allclose(va, v0, atol=1e-4)  # training moved the query tower


def test_every_lm_score_comes_from_the_server_once(trained):
    straight, stopped, resumed = trained["straight"], trained["stopped"], trained["resumed"]
    assert straight.scored_pairs > 0
    # the second run retrieves what the first did at its start: all from the cache; resumed,
    # it scores again only passages its second epoch retrieves and the first run's did not
    assert stopped.scored_pairs == 0 and stopped.cached_pairs == 8 * 4
    assert resumed.scored_pairs == 0


def test_the_trained_encoder_searches_the_collection(trained):
    retriever = trained["corpus"].retriever("chroma", 3,
                                            query_encoder=str(trained["root"] / "straight"))
    docs = retriever.invoke("Who designed the harbour lighthouse?")
    assert len(docs) == 3
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= 1.0


@pytest.fixture(scope="module")
def reembedded(vllm_url, demo_store, tmp_path_factory):
    """§4.4: passages re-embedded with the tower after every step; one run straight through,
    one stopped after two steps and resumed."""
    lm = VLLMTokens(vllm_url, VLLMClient(vllm_url).model)
    corpus = Corpus(demo_store)
    examples = demo()[:8]
    root = tmp_path_factory.mktemp("lsr-reembed")
    cache = lsr.ScoreCache(root / "scores.sqlite")
    config = {**CONFIG, "reembed_every": 1}
    straight = lsr.Trainer(corpus, lm, root / "straight", lsr.LSRConfig(**config), cache,
                           progress=False).train(examples)
    lsr.Trainer(corpus, lm, root / "resumed", lsr.LSRConfig(**config), cache,
                progress=False).train(examples, stop_after=2)
    resumed = lsr.Trainer(corpus, lm, root / "resumed", lsr.LSRConfig(**config), cache,
                          progress=False).train(examples)
    return {"root": root, "straight": straight, "resumed": resumed, "corpus": corpus}


def test_re_embedding_retrieves_from_the_towers_own_passage_vectors_and_resumes(reembedded):
    root, corpus = reembedded["root"], reembedded["corpus"]
    assert reembedded["resumed"].resumed_from == 2
    assert reembedded["resumed"].losses == pytest.approx(reembedded["straight"].losses, rel=1e-4)
    # one index per re-embedding step; each differs from the collection's MiniLM vectors
    base = lsr.PassageIndex(*corpus.chroma.passages())
    steps = [np.load(root / "straight" / f"index-step-{s}.npy") for s in (1, 2, 3)]
    assert all(not np.allclose(v, base.vectors, atol=1e-4) for v in steps)
    assert not np.allclose(steps[0], steps[2], atol=1e-4)
    # rounds after a re-embedding retrieved again: epoch 0's second step has its own file
    assert (root / "straight" / "epoch-0-step-1.json").exists()
    # the folder keeps the passages as the trained tower embeds them, and searches them
    tower = SentenceTransformer(str(root / "straight"), device="cpu")
    store = corpus.encoded(str(root / "straight"))
    assert store.chroma is not corpus.chroma and len(store.chroma) == len(corpus.chroma)
    doc = base.docs[7]
    own = store.chroma.embeddings([doc.id])[0]
    assert np.allclose(own, tower.encode([doc.page_content], normalize_embeddings=True)[0],
                       atol=1e-4)
    [(top, score)] = store.search(doc.page_content, 1)
    assert top.id == doc.id and score == pytest.approx(1.0, abs=1e-4)


class ThreeDimensions:
    path = "three-dimensional-encoder"

    def dimension(self):
        return 3

    def index(self):
        return None  # searches the store's own collection


def test_an_encoder_of_another_dimension_is_refused(demo_store):
    store = EncodedQueryStore(Corpus(demo_store).chroma, ThreeDimensions())  # type: ignore[arg-type]
    with pytest.raises(ActiveRagError, match="3-dimensional vectors but the Chroma collection "
                                             "holds 384"):
        store.search("Who founded the city?", 2)


def lsr_base():
    from activerag.stores.embedding import minilm_path

    return minilm_path()
