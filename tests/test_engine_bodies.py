"""The exact JSON body of every request the LM clients send, on each engine: llama-server's
bodies differ from vLLM's (activerag/serving/dialect.py) and a one-line change to either passed
the suite. Each test runs the client against an in-process fake that speaks one engine's
dialect (llama-server: `owned_by: llamacpp` in /v1/models, `content` in /tokenize and
/detokenize, logprobs in the chat shape; vLLM: `prompt`, the completion shape) and compares
the bodies it received, whole, with the ones written here for that engine."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from activerag.errors import NoLogprobs
from activerag.serving import slots, templates
from activerag.serving.dialect import LLAMA_CPP, VLLM
from activerag.serving.generation import ServerTimes
from activerag.serving.lm import VLLMClient
from activerag.serving.probe_requests import ask
from activerag.serving.template_render import CHATML_FALLBACK
from activerag.serving.token_lm import VLLMTokens
from activerag.testing.fake_lm import QuietHandler, serving

MODEL = "fake-model"
REPLY = " Gepu lies on the Vedria.\nQuestion: where is Kelmor?"
LP = -0.25
"""The logprob of every chosen token; the j-th alternative has LP - 1 - j."""
BOS_ID = 1
WINDOW = 2048
ENGINES = (VLLM, LLAMA_CPP)
NO_TEMPLATE = ("As of transformers v4.44, default chat template is no longer allowed, so you "
               "must provide a chat template if the tokenizer does not define one.")
"""What vLLM answers a chat tokenize for a model without a template (HTTP 400)."""
Render = Callable[[list[dict[str, str]]], str | None]
"""A chat template: the whole conversation rendered, closing tags and all; None: refused."""


class Engine:
    """What one fake server knows (its dialect, reply, template, BOS) and every request it got.
    Tokens are words, punctuation marks and SPECIALS (each one token, as a model's special
    tokens are); ids are given in the order tokens are first seen, from 10 on."""

    def __init__(self, engine: str, reply: str = REPLY, template: Render | None = None,
                 bos: str = "", specials: Sequence[str] = ()) -> None:
        self.engine, self.reply, self.template, self.bos = engine, reply, template, bos
        self.specials = (*specials, *([bos] if bos else []))
        self.requests: list[tuple[str, dict[str, Any] | None]] = []
        """(path, JSON body) of every request; a GET's path is "GET /path", its body None."""
        self.keys: list[str | None] = []
        """The Authorization header of every request."""
        self._vocab: dict[str, int] = {bos: BOS_ID} if bos else {}
        self._lock = threading.Lock()

    @property
    def llama(self) -> bool:
        return self.engine == LLAMA_CPP

    def pieces(self, text: str, plain: bool = False) -> list[str]:
        """TEXT's tokens (PLAIN: special tokens' texts read as plain characters, as
        llama-server does with parse_special false)."""
        specials = () if plain else self.specials
        parts = re.split("(" + "|".join(map(re.escape, specials)) + ")", text) \
            if specials else [text]
        out: list[str] = []
        for i, part in enumerate(parts):
            out += [part] if i % 2 else re.findall(
                r"\s*[A-Za-z0-9]+|\s*[^\sA-Za-z0-9]|\s+", part)
        return out

    def ids(self, text: str, plain: bool = False) -> list[int]:
        with self._lock:
            return [self._vocab.setdefault(p, len(self._vocab) + 10)
                    for p in self.pieces(text, plain)]

    def word(self, token: int) -> str:
        with self._lock:
            return next(w for w, i in self._vocab.items() if i == token)

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path and body is not None]


def _lp_vllm(words: list[str], ids: list[int], k: int, as_ids: bool,
             start: int = 0) -> dict[str, Any]:
    spell = (lambda w, i: f"token_id:{i}") if as_ids else (lambda w, i: w)
    offsets, at = [], start
    for w in words:
        offsets.append(at)
        at += len(w)
    return {"tokens": [spell(w, i) for w, i in zip(words, ids, strict=True)],
            "token_logprobs": [LP] * len(words),
            "top_logprobs": [{spell(w, i): LP, **{spell(f" alt{j}", 9000 + j): LP - 1 - j
                                                  for j in range(k - 1)}}
                             for w, i in zip(words, ids, strict=True)],
            "text_offset": offsets}


def _entry(word: str, token: int, logprob: float) -> dict[str, Any]:
    return {"id": token, "token": word, "bytes": list(word.encode()), "logprob": logprob}


def _lp_llama(words: list[str], ids: list[int], k: int) -> dict[str, Any]:
    """llama-server's logprobs: the chat shape, each token's id beside its text."""
    return {"content": [{**_entry(w, i, LP), "top_logprobs": [
        _entry(w, i, LP), *[_entry(f" alt{j}", 9000 + j, LP - 1 - j) for j in range(k - 1)]]}
        for w, i in zip(words, ids, strict=True)]}


class _Handler(QuietHandler):
    fake: Engine

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "code": status}})

    def do_GET(self) -> None:
        fake = self.fake
        fake.requests.append((f"GET {self.path}", None))
        fake.keys.append(self.headers.get("authorization"))
        if self.path == "/v1/models":
            entry: dict[str, Any] = {"id": MODEL, "object": "model"}
            entry.update({"owned_by": "llamacpp", "meta": {"n_ctx": WINDOW}} if fake.llama
                         else {"owned_by": "vllm", "max_model_len": WINDOW})
            self._json(200, {"object": "list", "data": [entry]})
        elif self.path == "/props" and fake.llama:
            # without a template of its own, llama-server renders its built-in ChatML
            self._json(200, {"total_slots": 4, "model_path": "/nowhere/model.gguf",
                             "chat_template": CHATML_FALLBACK if fake.template is None
                             else "{# the model's own #}"})
        else:
            self._error(404, "Not Found")

    def do_POST(self) -> None:
        fake = self.fake
        body = self._body()
        fake.requests.append((self.path, body))
        fake.keys.append(self.headers.get("authorization"))
        route = {"/tokenize": self._tokenize, "/detokenize": self._detokenize,
                 "/apply-template": self._apply_template, "/v1/completions": self._complete,
                 "/v1/chat/completions": self._chat}.get(self.path)
        if route is None:
            self._error(404, "Not Found")
        else:
            route(body)

    def _tokenize(self, body: dict[str, Any]) -> None:
        fake = self.fake
        plain = fake.llama and body.get("parse_special") is False
        if fake.llama:
            text, special = body.get("content"), body.get("add_special", False)
        elif "messages" in body:
            if fake.template is None:
                self._error(400, NO_TEMPLATE)
                return
            text, special = self._render(body), False
            if text is None:
                self._error(400, "Conversation roles must alternate user/assistant")
                return
        else:  # vLLM's default adds the BOS
            text, special = body.get("prompt"), body.get("add_special_tokens", True)
        if not isinstance(text, str):
            self._error(400, "no text to tokenize in this engine's spelling")
            return
        ids = ([BOS_ID] if special and fake.bos else []) + fake.ids(text, plain)
        self._json(200, {"tokens": ids} if fake.llama
                   else {"tokens": ids, "count": len(ids), "max_model_len": WINDOW})

    def _render(self, body: dict[str, Any]) -> str | None:
        """vLLM's chat tokenize: the template's text, cut after the final message's content
        when continuing it (as continue_final_message does); None: the template refused."""
        rendered = self.fake.template(body["messages"]) if self.fake.template else None
        if rendered is not None and body.get("continue_final_message"):
            final = body["messages"][-1]["content"]
            rendered = rendered[:rendered.rindex(final) + len(final)]
        return rendered

    def _detokenize(self, body: dict[str, Any]) -> None:
        text = "".join(self.fake.word(i) for i in body["tokens"])
        self._json(200, {"content" if self.fake.llama else "prompt": text})

    def _apply_template(self, body: dict[str, Any]) -> None:
        fake = self.fake
        if not fake.llama:
            self._error(404, "Not Found")
            return
        rendered = (fake.template or chatml)(body["messages"])
        if rendered is None:
            self._error(500, "Conversation roles must alternate user/assistant")
        else:
            self._json(200, {"prompt": rendered})

    def _chat(self, body: dict[str, Any]) -> None:
        self._json(200, {"choices": [{"index": 0, "finish_reason": "length", "message": {
            "role": "assistant", "content": self.fake.pieces(self.fake.reply)[0]}}]})

    def _generated(self, body: dict[str, Any]) -> tuple[list[str], str]:
        """The words generated for BODY (cut at max_tokens and at a stop it names) and why
        generation ended."""
        fake = self.fake
        words = fake.pieces(fake.reply)[:body["max_tokens"]]
        bias = [int(t) for t, v in (body.get("logit_bias") or {}).items() if v >= 50]
        if bias and words:
            words[0] = fake.word(bias[0])
        text = "".join(words)
        found = [(at, s) for s in body.get("stop") or [] if (at := text.find(s)) >= 0]
        if not found:
            return words, "length"
        at, stop = min(found)
        cut = at + (len(stop) if body.get("include_stop_str_in_output") else 0)
        kept, pos = [], 0
        for w in words:
            if pos >= cut:
                break
            kept.append(w[:cut - pos])
            pos += len(w)
        return kept, "stop"

    def _complete(self, body: dict[str, Any]) -> None:
        fake = self.fake
        prompt = body["prompt"]
        prompt_ids = prompt if isinstance(prompt, list) else fake.ids(prompt)
        words, finish = self._generated(body)
        ids = [fake.ids(w)[0] for w in words]
        k = body.get("logprobs")
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        if body.get("stream"):
            self._stream(words, ids, k, as_ids, finish, len(prompt_ids),
                         bool(body.get("timings_per_token")))
            return
        choices = []
        for n in range(body.get("n", 1)):
            lp: dict[str, Any] | None = None
            text = "".join(words)
            if k is not None and fake.llama:
                lp = _lp_llama(words, ids, k)
            elif k is not None and body.get("echo"):
                prompt_words = [fake.word(i) for i in prompt_ids]
                lp = _lp_vllm(prompt_words + words, [*prompt_ids, *ids], k, as_ids)
                lp["token_logprobs"][0] = None
                text = "".join(prompt_words) + text
            elif k is not None:
                lp = _lp_vllm(words, ids, k, as_ids)
            choices.append({"index": n, "text": text, "logprobs": lp, "finish_reason": finish})
        self._json(200, {"id": "cmpl-fake", "object": "text_completion", "model": MODEL,
                         "choices": choices, "usage": {"prompt_tokens": len(prompt_ids),
                                                       "completion_tokens": len(words)}})

    def _stream(self, words: list[str], ids: list[int], k: int | None, as_ids: bool,
                finish: str, prompt_tokens: int, timings: bool = False) -> None:
        """vLLM: usage in every chunk (the client asks for it); llama-server: in the last, and
        with TIMINGS its prefill and decode times in every chunk (TIMED's numbers)."""
        fake = self.fake
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        offset = 0
        try:
            for i, (word, token) in enumerate(zip(words, ids, strict=True)):
                lp = None
                if k is not None:
                    lp = _lp_llama([word], [token], k) if fake.llama else \
                        _lp_vllm([word], [token], k, as_ids, offset)
                last = i == len(words) - 1
                chunk: dict[str, Any] = {
                    "id": "cmpl-fake", "object": "text_completion", "created": 0,
                    "model": MODEL, "choices": [{"index": 0, "text": word, "logprobs": lp,
                                                 "finish_reason": finish if last else None}]}
                if fake.llama and timings:
                    chunk["timings"] = {"cache_n": TIMED["cache_n"],
                                        "prompt_n": prompt_tokens - TIMED["cache_n"],
                                        "prompt_ms": TIMED["prompt_ms"], "predicted_n": i + 1,
                                        "predicted_ms": TIMED["per_token_ms"] * (i + 1),
                                        "predicted_per_second": 1.0}
                if not fake.llama or last:
                    chunk["usage"] = {"prompt_tokens": prompt_tokens,
                                      "completion_tokens": i + 1,
                                      "total_tokens": prompt_tokens + i + 1}
                offset += len(word)
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            return  # the client closed the stream at a stop string, as it does on llama-server


TIMED = {"cache_n": 3, "prompt_ms": 120.5, "per_token_ms": 40.0}
"""The fake llama-server's timings: 3 prompt tokens from the cache, the rest prefilled in
120.5 ms, 40 ms per token decoded."""


@contextmanager
def serve(fake: Engine) -> Iterator[str]:
    """FAKE on a free loopback port; yields its base URL (.../v1)."""
    with serving(type("EngineHandler", (_Handler,), {"fake": fake})) as url:
        yield url


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def _fresh_slot_books(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake may get an earlier one's port: its slots start empty, as a new server's do. The
    fake llama-server stands for one started with `--cache-ram 0`, whose slots may be named."""
    monkeypatch.setattr(slots, "_books", {})
    monkeypatch.setattr(slots, "safe_to_name", lambda url: True)


STREAMED = {"include_usage": True, "continuous_usage_stats": True}
OWN = {VLLM: {}, LLAMA_CPP: {"timings_per_token": True, "id_slot": os.getpid() % 4}}
"""What every completion adds on each engine: llama-server is asked for its prefill and decode
times on every chunk, and sent to a slot (serving/slots.py: a fresh book starts a process at its
pid's turn of the fake's 4 slots)."""
ASKED = {VLLM: ["GET /v1/models"], LLAMA_CPP: ["GET /v1/models", "GET /props"]}
"""What a client asks before its first completion: llama-server's slots too."""


# --- the LM client's completions (serving/lm.py) ---------------------------------------------

async def generate(engine: str, top: int = 1, **kwargs: Any) -> tuple[Any, Engine]:
    fake = Engine(engine)
    with serve(fake) as url:
        gen = await VLLMClient(url, MODEL, top_logprobs=top).generate("Q: where is Gepu?\nA:",
                                                                      **kwargs)
    return gen, fake


async def test_a_completion_without_stops_is_one_body_on_both_engines(engine):
    gen, fake = await generate(engine, max_tokens=4)
    assert fake.paths() == [*ASKED[engine], "/v1/completions"]
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": "Q: where is Gepu?\nA:", "max_tokens": 4, "temperature": 0.0,
        "logprobs": 1, "stream": True, "stream_options": STREAMED, **OWN[engine]}]
    assert gen.text == " Gepu lies on the"
    assert [(t.text, t.logprob, t.start) for t in gen.tokens] == [
        (" Gepu", LP, 0), (" lies", LP, 5), (" on", LP, 10), (" the", LP, 13)]
    assert gen.generated_tokens == 4 and gen.prompt_tokens == 8 and not gen.finished


STOP_BODY = {VLLM: {"stop": ["\n", "Question:"], "include_stop_str_in_output": True},
             LLAMA_CPP: {}}
"""What stop strings add to a completion's body: vLLM is sent them (kept in its text, so that
it streams each token as decoded); llama-server, which does not say which stop ended its
stream, none (the client finds them)."""


async def test_stop_strings_go_to_vllm_only_and_the_client_cuts_both(engine):
    gen, fake = await generate(engine, max_tokens=20, stop=["\n", "Question:"])
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": "Q: where is Gepu?\nA:", "max_tokens": 20,
        "temperature": 0.0, "logprobs": 1, "stream": True, "stream_options": STREAMED,
        **STOP_BODY[engine], **OWN[engine]}]
    assert (gen.text, gen.stop_reason, gen.finished) == (" Gepu lies on the Vedria.", "\n", True)
    assert "".join(t.text for t in gen.tokens) == gen.text


async def test_a_logit_bias_and_k_alternatives_are_asked_alike_and_read_alike(engine):
    gen, fake = await generate(engine, top=3, max_tokens=2, logit_bias={7: 5.0, 12: -100.0})
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": "Q: where is Gepu?\nA:", "max_tokens": 2, "temperature": 0.0,
        "logprobs": 3, "stream": True, "stream_options": STREAMED,
        "logit_bias": {"7": 5.0, "12": -100.0}, **OWN[engine]}]
    # llama-server's chat-shape alternatives are read as vLLM's
    assert [(t.text, t.start, t.top) for t in gen.tokens] == [
        (" Gepu", 0, (LP, LP - 1, LP - 2)), (" lies", 5, (LP, LP - 1, LP - 2))]


async def test_a_client_that_reads_no_logprobs_asks_for_none(engine):
    gen, fake = await generate(engine, top=0, max_tokens=3)
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": "Q: where is Gepu?\nA:", "max_tokens": 3, "temperature": 0.0,
        "stream": True, "stream_options": STREAMED, **OWN[engine]}]
    assert gen.text == " Gepu lies on" and gen.tokens == [] and gen.generated_tokens == 3


async def test_llama_server_s_own_times_come_with_each_generation(engine):
    gen, _ = await generate(engine, max_tokens=4)
    assert gen.server == ({VLLM: None, LLAMA_CPP: ServerTimes(3, 5, 120.5, 4, 160.0)}[engine])


async def test_a_stream_closed_at_a_cut_still_counts_its_prompt(engine):
    # llama-server's usage comes in the last chunk only, which a cut never reads: the
    # prompt's size then comes from the timings of the chunks read
    gen, _ = await generate(engine, max_tokens=4, cut=lambda text, final: 5 if " lies" in text
                            else None)
    assert gen.text == " Gepu" and gen.prompt_tokens == 8
    assert gen.server == ({VLLM: None, LLAMA_CPP: ServerTimes(3, 5, 120.5, 2, 80.0)}[engine])


async def test_questions_asked_at_once_go_to_slots_of_their_own():
    fake = Engine(LLAMA_CPP)
    with serve(fake) as url:
        client = VLLMClient(url, MODEL)
        first, second = await asyncio.gather(
            client.generate("exemplars, Q1", max_tokens=2),
            client.generate("exemplars, Q2", max_tokens=2))
    assert first.text == second.text == " Gepu lies"
    own = os.getpid() % 4
    sent = sorted((b.get("id_slot"), b["max_tokens"]) for b in fake.bodies("/v1/completions"))
    assert sent == sorted([(own, 2), ((own + 1) % 4, 2)])  # this process's turn, then the next


async def test_a_llama_server_that_may_keep_prompts_in_host_memory_chooses_its_slots(
        monkeypatch):
    monkeypatch.setattr(slots, "safe_to_name", lambda url: False)
    fake = Engine(LLAMA_CPP)
    with serve(fake) as url:
        client = VLLMClient(url, MODEL)
        await asyncio.gather(client.generate("exemplars, Q1", max_tokens=2),
                             client.generate("exemplars, Q2", max_tokens=2))
    assert not any("id_slot" in b for b in fake.bodies("/v1/completions"))
    assert "GET /props" not in fake.paths()  # its slots are not asked either


@pytest.mark.parametrize("safe, name_slots, named", [
    (False, True, True),  # to test a server: named even there
    (True, False, False),  # never
    (True, None, True), (False, None, False)])  # where safe
async def test_a_client_names_slots_where_safe_unless_told(monkeypatch, safe, name_slots, named):
    monkeypatch.setattr(slots, "safe_to_name", lambda url: safe)
    fake = Engine(LLAMA_CPP)
    with serve(fake) as url:
        await VLLMClient(url, MODEL, name_slots=name_slots).generate("Q1", max_tokens=2)
    assert ["id_slot" in b for b in fake.bodies("/v1/completions")] == [named]


async def test_vllm_is_sent_no_slot():
    fake = Engine(VLLM)
    with serve(fake) as url:
        client = VLLMClient(url, MODEL)
        await asyncio.gather(client.generate("exemplars, Q1", max_tokens=2),
                             client.generate("exemplars, Q2", max_tokens=2))
    bodies = fake.bodies("/v1/completions")
    assert sorted(b["prompt"] for b in bodies) == ["exemplars, Q1", "exemplars, Q2"]
    assert not any("id_slot" in b for b in bodies)


TOKENIZE_BODY = {VLLM: {"model": MODEL, "prompt": "Gepu lies", "add_special_tokens": False},
                 LLAMA_CPP: {"model": MODEL, "content": "Gepu lies", "add_special": False}}
"""/tokenize's body for "Gepu lies", without the BOS a completion adds."""


async def test_the_lm_client_s_token_ids_use_the_engine_s_tokenize_body(engine):
    fake = Engine(engine)
    with serve(fake) as url:
        ids = await VLLMClient(url, MODEL).token_ids("Gepu lies")
    assert fake.paths() == [*ASKED[engine], "/tokenize"]  # beside /v1, not under it
    assert fake.bodies("/tokenize") == [TOKENIZE_BODY[engine]]
    assert ids == [10, 11]


# --- the token-level client (serving/token_lm.py) ---------------------------------------------

async def test_tokenize_and_detokenize_bodies_and_answers(engine):
    fake = Engine(engine)
    with serve(fake) as url:
        lm = VLLMTokens(url, MODEL)
        ids = await lm.tokenize("Gepu lies")
        text = await lm.detokenize(ids)
        piece = await lm.detokenize(ids[1:])
        again = await lm.detokenize(ids[1:])  # a single token's text is asked once
        window = await lm.context_window()
    assert (ids, text, piece, again, window) == ([10, 11], "Gepu lies", " lies", " lies", WINDOW)
    assert fake.paths() == ["GET /v1/models", "/tokenize", "/detokenize", "/detokenize"]
    assert fake.bodies("/tokenize") == [TOKENIZE_BODY[engine]]
    assert fake.bodies("/detokenize") == [{"model": MODEL, "tokens": [10, 11]},
                                          {"model": MODEL, "tokens": [11]}]


SAMPLING = {"temperature": 0.7, "top_p": 0.9, "top_k": 20}


async def test_n_samples_are_one_request_with_n_and_a_seed(engine):
    fake = Engine(engine)
    with serve(fake) as url:
        out = await VLLMTokens(url, MODEL).sample("Q:", 3, 8, seed=5, stop=["\n"], **SAMPLING)
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": "Q:", "max_tokens": 8, **SAMPLING, "stop": ["\n"], "n": 3,
        "seed": 5}]
    assert out.texts == [" Gepu lies on the Vedria."] * 3
    assert (out.prompt_tokens, out.generated_tokens, out.requests) == (2, 6, 1)


async def test_separate_samples_are_one_request_each_with_their_own_seed(engine):
    fake = Engine(engine)
    with serve(fake) as url:
        out = await VLLMTokens(url, MODEL).sample("Q:", 2, 2, seed=5, separate=True, **SAMPLING)
    assert sorted(fake.bodies("/v1/completions"), key=lambda b: b["seed"]) == [
        {"model": MODEL, "prompt": "Q:", "max_tokens": 2, **SAMPLING, "n": 1, "seed": 5},
        {"model": MODEL, "prompt": "Q:", "max_tokens": 2, **SAMPLING, "n": 1, "seed": 6}]
    assert out.texts == [" Gepu lies"] * 2 and out.requests == 2


async def test_a_look_ahead_sends_token_ids_and_reads_ids_back_from_either_shape(engine):
    fake = Engine(engine)
    with serve(fake) as url:
        lm = VLLMTokens(url, MODEL)
        prompt = await lm.tokenize("Q:")
        steps = await lm.steps(prompt, 2, 3)
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": [10, 11], "max_tokens": 2, "temperature": 0.0, "logprobs": 3,
        "return_tokens_as_token_ids": True}]
    alternatives = {9000: LP - 1, 9001: LP - 2}
    assert [(p.token, p.logprob, p.top) for p in steps.positions] == [
        (12, LP, {12: LP, **alternatives}), (13, LP, {13: LP, **alternatives})]
    assert not steps.ended and steps.prompt_tokens == 2


async def test_scoring_echoes_the_prompt_and_llama_server_is_refused_by_name(engine):
    fake = Engine(engine)
    with serve(fake) as url:
        lm = VLLMTokens(url, MODEL)
        ids = await lm.tokenize("Gepu lies on")
        if engine == LLAMA_CPP:
            with pytest.raises(NoLogprobs, match="serve with --engine vllm"):
                await lm.score(ids[:1], ids[1:])
        else:
            assert await lm.score(ids[:1], ids[1:]) == [LP, LP]
    assert fake.bodies("/v1/completions") == [{
        "model": MODEL, "prompt": [10, 11, 12], "max_tokens": 0, "echo": True, "logprobs": 1,
        "return_tokens_as_token_ids": True}]


# --- learning a chat template (serving/templates.py) ------------------------------------------

def chatml(messages: list[dict[str, str]]) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


CHATML = ("<|im_start|>", "<|im_end|>")
NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}
RENDER_BODY = {
    VLLM: ("/tokenize", {"model": MODEL, "messages": templates.conversation(), **NO_THINKING,
                         "add_generation_prompt": False, "continue_final_message": True}),
    LLAMA_CPP: ("/apply-template", {"model": MODEL, "messages": templates.conversation(),
                                    **NO_THINKING})}
"""The request that renders the sentinel conversation, thinking off: vLLM's chat tokenize (its
text comes back through /detokenize), llama-server's /apply-template (text back)."""
TEXT = {VLLM: "prompt", LLAMA_CPP: "content"}
SPECIAL = {VLLM: "add_special_tokens", LLAMA_CPP: "add_special"}
"""/tokenize's keys for the text, and for adding the BOS a completion adds."""


async def test_learning_a_template_sends_each_engine_its_own_bodies(engine):
    fake = Engine(engine, template=chatml, specials=CHATML)
    with serve(fake) as url:
        layout = await templates.learn(url, MODEL)
    assert layout is not None and layout.markers == CHATML
    render_path, render_body = RENDER_BODY[engine]
    assert fake.requests[:2] == [("GET /v1/models", None), (render_path, render_body)]
    # llama-server renders its built-in ChatML for a GGUF without a template: /props tells
    assert ("GET /props" in fake.paths()) == (engine == LLAMA_CPP)
    texts = [b for b in fake.bodies("/tokenize") if b != render_body]
    text, special = TEXT[engine], SPECIAL[engine]
    # the BOS a completion adds: "a" tokenized without, then with the special tokens
    assert [b for b in texts if b[text] == "a"] == [
        {"model": MODEL, text: "a", special: False}, {"model": MODEL, text: "a", special: True}]
    # llama-server is also asked whether each marker splits when read as plain text
    plain = [b for b in texts if "parse_special" in b]
    assert plain == ([{"model": MODEL, text: m, special: False, "parse_special": False}
                      for m in CHATML] if engine == LLAMA_CPP else [])
    # every other text is tokenized as a completion's prompt is, in the engine's spelling
    assert all(set(b) == {"model", text, special} and b[special] is False
               for b in texts if b not in plain and b[text] != "a")
    assert fake.bodies("/detokenize") and all(
        set(b) == {"model", "tokens"} for b in fake.bodies("/detokenize"))


# --- the probe (serving/probe_requests.py) -----------------------------------------------------

PROMPT = "The capital"
PROBE_BODIES = [
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": 1, "temperature": 0.0}),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "temperature": 0.0, "logprobs": 20}),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": 1, "temperature": 0.0, "stream": True,
                         "logprobs": 1, "stream_options": STREAMED}),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": 0, "echo": True, "logprobs": 1}),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": 1, "n": 2, "temperature": 1.0,
                         "top_p": 1.0, "top_k": -1, "seed": 0}),
    ("/tokenize", "TOKENIZE"),
    ("/detokenize", {"tokens": [10]}),
    ("/v1/completions", {"prompt": [10, 11], "max_tokens": 1, "temperature": 0.0, "logprobs": 1,
                         "return_tokens_as_token_ids": True}),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": 1, "temperature": 0.0,
                         "logit_bias": {"11": 100}, "logprobs": 1,
                         "return_tokens_as_token_ids": True}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}),
]
"""Every request the probe sends after GET /v1/models, in order, less the model (each body
carries it); /tokenize's body is the engine's."""
PROBE_TOKENIZE = {VLLM: {"prompt": PROMPT, "add_special_tokens": False},
                  LLAMA_CPP: {"content": PROMPT, "add_special": False}}
FOUND = {"completions", "logprobs", "top_logprobs", "stream", "n", "tokenize", "token_ids",
         "logit_bias", "chat"}


def test_the_probe_sends_every_request_as_written_on_each_engine(engine):
    fake = Engine(engine, reply=" Paris is")
    with serve(fake) as url:
        found = ask(url, None, 10.0)
    want = [("GET /v1/models", None)] + [
        (path, {"model": MODEL, **(PROBE_TOKENIZE[engine] if body == "TOKENIZE" else body)})
        for path, body in PROBE_BODIES]
    if engine == LLAMA_CPP:
        want.append(("GET /props", None))  # its slots cap n
    assert fake.requests == want
    # llama-server echoes no prompt logprobs; everything else both give
    assert found.found == FOUND | ({"echo"} if engine == VLLM else set())
    assert (found.engine, found.top_logprobs, found.context_length, found.most_n) == (
        engine, 20, WINDOW, 4 if engine == LLAMA_CPP else None)


# --- the key every request carries ------------------------------------------------------------

async def test_every_client_sends_the_api_key_on_every_request(engine, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret")
    fake = Engine(engine, template=chatml, specials=CHATML)
    with serve(fake) as url:
        client = VLLMClient(url, MODEL)
        await client.generate("Q:", max_tokens=1)
        await client.token_ids("a")
        lm = VLLMTokens(url, MODEL)
        await lm.detokenize(await lm.tokenize("a b"))
        await lm.sample("Q:", 1, 1, temperature=1.0, top_p=1.0, top_k=-1, seed=0)
        await templates.learn(url, MODEL)
        ask(url, MODEL, 10.0)
    assert len(fake.keys) > 20 and set(fake.keys) == {"Bearer s3cret"}
