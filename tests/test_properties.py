"""Properties of the pure logic: masking, spans, interleaving, trimming, stream chunks, answers."""

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document

from activerag.answers import extract_answer, find_answer, normalize
from activerag.errors import NoLogprobs
from activerag.nodes.flare.logic import low_confidence_spans
from activerag.nodes.loop_logic import interleave, masked_query
from activerag.serving.generation import Token, _tokens_of, trim

# No example database, so that a run, and a mutation run in particular, depends only on its seed.
FAST = settings(max_examples=60, deadline=None, database=None)

# Token texts as a BPE vocabulary makes them: a word start (leading space), a word piece, or
# punctuation that joins the word before it.
PIECES = [" the", " Kel", "mor", " New", "ark", "ville", " York", "s", ".", ",", " of", " Da",
          "eselin", " 19", "52", " (", ")"]
probs = st.sampled_from([0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 1.0])
betas = st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])


def laid_out(pairs):
    """(text, prob) pairs as TokenProbs laid end to end, and the draft they spell."""
    out, pos = [], 0
    for text, prob in pairs:
        out.append((text, prob, pos))
        pos += len(text)
    return out, "".join(t for t, _ in pairs)


drafts = st.lists(st.tuples(st.sampled_from(PIECES), probs), min_size=1, max_size=12).map(laid_out)


def is_subsequence(short, long):
    rest = iter(long)
    return all(any(x == y for y in rest) for x in short)


# --- masking (FLARE §3.2.2 implicit queries) ---

@FAST
@given(drafts, st.sampled_from(["token", "word"]))
def test_beta_zero_keeps_the_whole_draft(draft, unit):
    tokens, text = draft
    assert masked_query(tokens, 0.0, unit) == " ".join(text.split())


@FAST
@given(drafts, betas)
def test_token_masking_keeps_only_pieces_of_draft_words(draft, beta):
    tokens, text = draft
    words = text.split()
    assert all(any(w in d for d in words) for w in masked_query(tokens, beta).split())


@FAST
@given(drafts, betas, st.frozensets(st.sampled_from(["kelmor", "new", "the", "daeselin"])))
def test_word_masking_keeps_whole_draft_words_in_order(draft, beta, keep):
    tokens, text = draft
    out = masked_query(tokens, beta, "word", keep).split()
    assert is_subsequence(out, text.split())
    # a word of the question is never masked
    assert [w for w in text.split() if w.strip(string.punctuation).lower() in keep] == [
        w for w in out if w.strip(string.punctuation).lower() in keep]


@FAST
@given(drafts, betas, betas)
def test_raising_beta_never_adds_words(draft, b1, b2):
    tokens, _ = draft
    low, high = min(b1, b2), max(b1, b2)
    # whole words: the higher beta keeps a subsequence of the words the lower one keeps
    assert is_subsequence(masked_query(tokens, high, "word").split(),
                          masked_query(tokens, low, "word").split())
    # tokens: removing a token inside a word splits the word ("New ville"), so compare the
    # characters kept, not the word count
    assert is_subsequence("".join(masked_query(tokens, high).split()),
                          "".join(masked_query(tokens, low).split()))


# --- span extraction (FLARE §3.2.2 explicit queries) ---

@FAST
@given(drafts, betas, st.integers(0, 4), st.integers(0, 4))
def test_spans_lie_in_the_sentence_and_grow_with_merge_gap(draft, beta, g1, g2):
    tokens, text = draft
    small, large = min(g1, g2), max(g1, g2)
    narrow = low_confidence_spans(tokens, beta, text, small)
    wide = low_confidence_spans(tokens, beta, text, large)
    assert all(s and s in text for s in narrow + wide)
    assert len(set(wide)) == len(wide)
    # merging only joins spans: every span at a smaller gap lies inside one at a larger gap.
    # (The number of spans can still grow, because empty and repeated texts are dropped:
    # " . x ," gives no span at gap 0 and "x" at gap 1.)
    assert all(any(s in w for w in wide) for s in narrow)


@st.composite
def distinct_word_drafts(draw):
    """Drafts of distinct words, some cut into two tokens: span texts cannot repeat."""
    words = draw(st.lists(st.text("abcdefgh", min_size=2, max_size=5), min_size=1, max_size=8,
                          unique=True))
    pairs = []
    for i, w in enumerate(words):
        head = ("" if i == 0 else " ") + w
        if draw(st.booleans()):
            pairs += [(head[:-1], draw(probs)), (head[-1], draw(probs))]
        else:
            pairs.append((head, draw(probs)))
    return laid_out(pairs)


@FAST
@given(distinct_word_drafts(), betas, st.integers(0, 4), st.integers(0, 4))
def test_spans_of_distinct_words_are_in_order_and_fewer_with_a_larger_gap(draft, beta, g1, g2):
    tokens, text = draft
    small, large = min(g1, g2), max(g1, g2)
    narrow = low_confidence_spans(tokens, beta, text, small)
    wide = low_confidence_spans(tokens, beta, text, large)
    assert len(wide) <= len(narrow)
    for spans in (narrow, wide):
        at = [re.search(rf"(?<!\S){re.escape(s)}(?!\S)", text).start() for s in spans]
        assert at == sorted(at)
        # spans are whole words
        assert all(set(s.split()) <= set(text.split()) for s in spans)


# --- interleaving rankings ---

rankings = st.lists(st.lists(st.sampled_from("abcdefghij"), max_size=6), max_size=4)


def docs_of(ids):
    return [Document(page_content=f"text {i}", id=i) for i in ids]


@FAST
@given(rankings, st.integers(1, 12))
def test_interleave_is_a_round_robin_without_duplicates(ids, k):
    out = [d.id for d in interleave([docs_of(r) for r in ids], k)]
    assert len(out) == len(set(out)) and len(out) <= k
    assert all(any(i in r for r in ids) for i in out)
    # rank order: each document is taken at the best rank it has in any ranking
    best = [min(r.index(i) for r in ids if i in r) for i in out]
    assert best == sorted(best)
    # a larger k only extends the list
    assert [d.id for d in interleave([docs_of(r) for r in ids], k + 3)][:len(out)] == out
    if k >= len(ids):
        assert all(r[0] in out for r in ids if r)
    if k >= sum(map(len, ids)):
        assert set(out) == {i for r in ids for i in r}


# --- trimming by offsets ---

@FAST
@given(st.lists(st.sampled_from(PIECES), max_size=10), st.data())
def test_trim_keeps_the_tokens_that_start_before_the_end(pieces, data):
    tokens, text = [], ""
    for p in pieces:
        tokens.append(Token(p, -0.5, len(text)))
        text += p
    end = data.draw(st.integers(0, len(text)))
    cut, kept = trim(text, tokens, end)
    assert text.startswith(cut) and len(cut) == end
    assert kept == tokens[:len(kept)]
    assert all(t.start < end for t in kept)
    assert all(t.start >= end for t in tokens[len(kept):])
    # the kept tokens cover the cut text, the last one perhaps reaching past it
    assert "".join(t.text for t in kept).startswith(cut)
    assert cut.startswith("".join(t.text for t in kept[:-1]))


# --- stream chunks ---

logprobs = st.one_of(st.none(), st.floats(-20.0, 0.0), st.integers(-20, 0))


@FAST
@given(st.lists(st.tuples(st.sampled_from(PIECES), logprobs), max_size=6), st.integers(0, 50),
       st.booleans())
def test_a_chunk_yields_its_scored_tokens_at_their_offsets(pairs, base, with_offsets):
    texts = [t for t, _ in pairs]
    starts = [base + sum(map(len, texts[:i])) for i in range(len(texts))]
    lp = {"tokens": texts, "token_logprobs": [p for _, p in pairs]}
    if with_offsets:
        starts = [s + 7 for s in starts]
        lp["text_offset"] = starts
    got = _tokens_of("".join(texts), {"logprobs": lp, "finish_reason": None}, base, "u")
    # a token without a logprob (vLLM's first prompt token) is left out
    assert got == [Token(t, p, s) for (t, p), s in zip(pairs, starts, strict=True)
                   if p is not None]
    # JSON may give a logprob of 0 as an integer
    assert all(type(t.logprob) is float for t in got)


@FAST
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=4), st.sampled_from([-1, 1]))
def test_a_chunk_whose_logprobs_do_not_match_its_tokens_is_an_error(texts, extra):
    lp = {"tokens": texts, "token_logprobs": [-1.0] * (len(texts) + extra)}
    with pytest.raises(ValueError):
        _tokens_of("".join(texts), {"logprobs": lp, "finish_reason": None}, 0, "u")


@FAST
@given(st.sampled_from(["", "word"]), st.sampled_from([None, "stop", "length"]))
def test_a_chunk_without_logprobs_is_an_error_unless_it_is_the_empty_last_one(piece, finish):
    info = {"logprobs": None, "finish_reason": finish}
    if piece or finish is None:
        with pytest.raises(NoLogprobs) as err:
            _tokens_of(piece, info, 0, "http://x/v1")
        assert str(err.value) == (
            "the server at http://x/v1 returned text without token logprobs; FLARE needs them. "
            "Use vLLM's OpenAI-compatible server (it honours `logprobs` on /v1/completions) "
            "and start it with --max-logprobs >= 1")
    else:
        assert _tokens_of(piece, info, 0, "http://x/v1") == []


# --- answer extraction ---

prefixes = st.text(string.ascii_letters + " .,\n", max_size=30).filter(
    lambda s: "answer is" not in s.lower())
answers = st.text(max_size=30).filter(
    lambda a: "\n" not in a and not a.endswith(".") and "answer is" not in a.lower())


@FAST
@given(prefixes, answers)
def test_the_answer_sentence_gives_back_the_answer(prefix, answer):
    assert normalize(extract_answer(f"{prefix} So the answer is {answer}.")) == normalize(answer)


@FAST
@given(prefixes, answers, answers)
def test_the_first_answer_sentence_wins(prefix, first, second):
    text = f"{prefix} So the answer is {first}.\nQuestion: x\nSo the answer is {second}."
    assert normalize(extract_answer(text)) == normalize(first)
    assert find_answer(text).start() == re.search("answer is", text).start()
