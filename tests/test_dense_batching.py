"""unit_vectors batches texts by token length and gives each text its own vector back."""

import numpy as np

from activerag.stores.embedding import ENCODE_BATCH, token_lengths, unit_vectors


class WordTokenizer:
    """One token per word, plus [CLS] and [SEP]; truncated at max_length."""

    def __call__(self, texts, add_special_tokens, truncation, max_length):
        ids = [[0] * (len(t.split()) + 2) for t in texts]
        return {"input_ids": [i[:max_length] if truncation else i for i in ids]}


class FakeEncoder:
    """Encodes a text as (its word count, its number); records every call's texts."""

    max_seq_length = 40

    def __init__(self):
        self.tokenizer = WordTokenizer()
        self.calls = []

    def encode(self, texts, batch_size, normalize_embeddings, show_progress_bar):
        self.calls.append(list(texts))
        return np.asarray([[len(t.split()), float(t.split()[0][1:])] for t in texts])


def texts_of(lengths):
    return [" ".join([f"t{i}"] + ["w"] * (n - 1)) for i, n in enumerate(lengths)]


def test_each_text_gets_its_own_vector_in_the_order_given():
    lengths = [(i * 37) % 50 + 1 for i in range(150)]
    model = FakeEncoder()
    out = unit_vectors(model, texts_of(lengths))
    assert out.dtype == np.float32
    assert out[:, 1].tolist() == list(range(150))
    assert out[:, 0].tolist() == lengths


def test_batches_hold_texts_of_neighbouring_token_lengths():
    lengths = [(i * 37) % 50 + 1 for i in range(150)]
    model = FakeEncoder()
    unit_vectors(model, texts_of(lengths))
    assert [len(c) for c in model.calls] == [64, 64, 22]
    spans = [[len(t.split()) for t in call] for call in model.calls]
    # longest first: every text of a batch is at least as long as any text of the next one
    assert all(min(a) >= max(b) for a, b in zip(spans[:-1], spans[1:], strict=True))


def test_token_lengths_truncate_at_the_models_limit():
    assert token_lengths(FakeEncoder(), ["a b", " ".join(["w"] * 100)]).tolist() == [4, 40]


def test_a_few_texts_are_encoded_in_one_call_as_given():
    model = FakeEncoder()
    texts = texts_of([3, 9, 1])
    out = unit_vectors(model, texts)
    assert model.calls == [texts] and len(texts) <= ENCODE_BATCH
    assert out[:, 1].tolist() == [0, 1, 2]


def test_a_model_without_a_tokenizer_is_measured_in_characters_and_still_batched():
    model = FakeEncoder()
    model.tokenizer = None
    assert token_lengths(model, ["a b", "abcdef"]).tolist() == [3, 6]
    lengths = [(i * 37) % 50 + 1 for i in range(100)]
    out = unit_vectors(model, texts_of(lengths))
    assert out[:, 1].tolist() == list(range(100)) and [len(c) for c in model.calls] == [64, 36]
