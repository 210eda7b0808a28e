"""REPLUG-LSR (Shi et al. 2023, §4): train the dense retriever's query tower from LM scores.

For a training question x with answer y, the current query encoder retrieves the top k passages
D' with cosine scores s(d, x). The retriever's distribution over them is

    P_R(d | x) = softmax_{D'}(s(d, x) / γ)                       (Eq. 3)

and the LM's is

    Q(d | x, y) = softmax_{D'}(score_LM(y | d ∘ x) / β)          (Eq. 4)

where score_LM is y's mean token log-probability under the served LM, prompted with the passage
and then the question (echo scoring). The loss is the batch mean of KL(P_R ‖ Q) (Eq. 5), with Q
a constant: only the query encoder learns. Passage embeddings stay as the collection stores them
(frozen document tower), so the trained encoder searches the same Chroma collection by
`query_embeddings` and nothing is re-indexed. The official code's loss differs in four ways
(see ../shared/design/replug-and-fb-rag.md); `direction="reverse"` gives its KL(Q ‖ P_R) for
comparison, with the other three fixed.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import sqlite3
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from activerag.demo import load_demo_questions
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example, hotpotqa, twowiki, twowiki500
from activerag.evaluation.metrics import normalize
from activerag.stores.chroma import unit_vectors

TEACHER_PROMPTS = {"qa": "{passage}\n\nQuestion: {question}\nAnswer:",
                   "lm": "{passage}\n\n{question}"}
"""The prompt under which the LM scores y given one passage (y follows after a space): a
question and its answer, or (the LM task) a text's first half and its second half."""

HELD_OUT_2WIKI = 500
"""The first 500 questions of the 1,000-question 2Wiki file are evaluation questions (every
`activerag eval --dataset 2wiki --n N` with N <= 500 draws from them); LSR trains on the rest."""


@dataclass
class LSRConfig:
    """How the query encoder is trained; defaults follow §5.2 where the CPU allows."""

    k: int = 10
    """Passages retrieved per question (the paper uses 20)."""
    gamma: float = 0.1
    """Retriever temperature γ of Eq. 3."""
    beta: float = 0.1
    """LM temperature β of Eq. 4."""
    lm_score: Literal["mean", "sum"] = "mean"
    """y's log-probability per token (under which β = 0.1 is sensible) or in total."""
    direction: Literal["paper", "reverse"] = "paper"
    """KL(P_R ‖ Q) as in Eq. 5, or the official code's KL(Q ‖ P_R)."""
    lr: float = 2e-5
    batch: int = 16
    epochs: int = 3
    warmup: float = 0.1
    """Share of all steps over which the learning rate rises linearly from 0 (then it decays
    linearly to 0)."""
    seed: int = 0
    checkpoint_every: int = 10
    """Steps between checkpoints (and at every epoch's end)."""
    teacher: Literal["lm", "shuffled"] = "lm"
    """shuffled: each question's LM scores permuted among its passages, a control that keeps
    the questions, passages and steps but not the LM's preferences."""
    task: Literal["qa", "lm"] = "qa"
    """qa: x a question, y its gold answer. lm: x the first half of a corpus passage, y the
    second, passages of x's own title never retrieved (§5.2 avoids trivial retrieval)."""
    reembed_every: int = 0
    """0: passage embeddings stay frozen (the tower is a query tower only). T > 0: the tower
    encodes the passages too, and every T steps they are re-embedded with it and retrieval
    starts again from the new index (§4.4), for a corpus small enough to re-embed; the encoder
    folder then keeps its own copy of the passages (`index/`)."""

    def check(self) -> None:
        if self.k < 2:
            raise ActiveRagError("LSR needs k >= 2 passages per question (a distribution over "
                                 "one passage carries no signal)")
        for name in ("gamma", "beta", "lr"):
            if getattr(self, name) <= 0:
                raise ActiveRagError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("batch", "epochs", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ActiveRagError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.reembed_every < 0:
            raise ActiveRagError(f"reembed_every must be 0 (never) or a number of steps, got "
                                 f"{self.reembed_every}")


# ---------------------------------------------------------------------------------------------
# The loss (pure)


def lsr_loss(retriever_scores: Any, lm_scores: Any, gamma: float, beta: float,
             direction: Literal["paper", "reverse"] = "paper") -> Any:
    """Eq. 5: the batch mean over questions of KL(P_R ‖ Q), P_R = softmax(s/γ) and Q =
    softmax(lm/β) over each row's passages; Q carries no gradient. Tensors are [batch, k]."""
    import torch

    log_p = torch.log_softmax(retriever_scores / gamma, dim=-1)
    log_q = torch.log_softmax(lm_scores.detach() / beta, dim=-1)
    if direction == "paper":
        per_question = (log_p.exp() * (log_p - log_q)).sum(dim=-1)
    else:
        per_question = (log_q.exp() * (log_q - log_p)).sum(dim=-1)
    return per_question.mean()


def lr_factor(step: int, total: int, warmup: float) -> float:
    """Linear warm-up over the first WARMUP share of TOTAL steps, then linear decay to 0."""
    rise = max(1, round(total * warmup))
    if step < rise:
        return (step + 1) / rise
    return max(0.0, (total - step) / max(1, total - rise))


def training_round(step: int, per_epoch: int, reembed_every: int = 0) -> tuple[int, int, int]:
    """The retrieval round STEP falls in: (epoch, first step, step after the last). A round is an
    epoch, cut where the passages are re-embedded (every REEMBED_EVERY steps, when non-zero);
    each round retrieves afresh with the encoder as it begins."""
    epoch = step // per_epoch
    first, end = epoch * per_epoch, (epoch + 1) * per_epoch
    if reembed_every:
        first = max(first, step // reembed_every * reembed_every)
        end = min(end, (step // reembed_every + 1) * reembed_every)
    return epoch, first, end


def lm_score(logprobs: Sequence[float], kind: Literal["mean", "sum"]) -> float:
    """An answer's LM score from its token log-probabilities."""
    if not logprobs:
        raise ActiveRagError("cannot score an empty answer")
    total = math.fsum(logprobs)
    return total / len(logprobs) if kind == "mean" else total


# ---------------------------------------------------------------------------------------------
# Training questions


def _key(question: str) -> str:
    return normalize(question)


def evaluation_questions() -> set[str]:
    """Normalised texts of every question an evaluation here may use: the held-out head of
    2Wiki-1000, 2Wiki-500, HotpotQA dev and test, and the demo questions."""
    texts = [e.question for e in twowiki()[:HELD_OUT_2WIKI]]
    texts += [e.question for e in twowiki500()]
    for split in ("dev", "test"):
        texts += [e.question for e in hotpotqa(split)]
    texts += [q["question"] for q in load_demo_questions()]
    return {_key(t) for t in texts}


def training_examples(n: int | None = None, seed: int = 0) -> list[Example]:
    """2Wiki-1000 questions after the held-out head, minus any whose normalised text is an
    evaluation question or repeats an earlier one; shuffled with SEED, the first N."""
    held_out = evaluation_questions()
    seen: set[str] = set()
    out = []
    for e in twowiki()[HELD_OUT_2WIKI:]:
        key = _key(e.question)
        if key in held_out or key in seen or not e.answers or not e.answers[0].strip():
            continue
        seen.add(key)
        out.append(e)
    random.Random(seed).shuffle(out)
    return out[:n] if n else out


def halves(text: str) -> tuple[str, str]:
    """A passage cut in two at its middle word (the LM task's x and y)."""
    words = text.split()
    half = len(words) // 2
    return " ".join(words[:half]), " ".join(words[half:])


def lm_split(docs: Sequence[Any], held_out: int = 40, seed: int = 0, min_words: int = 60
             ) -> tuple[list[Any], list[Example]]:
    """The LM experiment's passages and the LM task's training examples from the same corpus.

    The evaluated passages are HELD_OUT seeded picks among those of MIN_WORDS words or more
    (what benchmarks/replug_lm.py scores); training uses the other long passages whose title
    none of them has, x its first half and y its second, in a seeded order.
    """
    candidates = [d for d in docs if len(d.page_content.split()) >= min_words]
    evaluated = random.Random(seed).sample(candidates, min(held_out, len(candidates)))
    titles = {d.metadata.get("title", "") for d in evaluated}
    train = []
    for d in candidates:
        title = d.metadata.get("title", "")
        if title in titles:
            continue
        x, y = halves(d.page_content)
        train.append(Example(d.id or x[:40], x, [y], [title]))
    random.Random(seed + 1).shuffle(train)
    return evaluated, train


def overlap(train: Iterable[Example], test: Iterable[Example]) -> int:
    """How many TEST questions share a normalised text with a TRAIN question."""
    keys = {_key(e.question) for e in train}
    return sum(1 for e in test if _key(e.question) in keys)


# ---------------------------------------------------------------------------------------------
# LM scores, cached


class ScoreCache:
    """LM scores by (question, passage id, answer, model, teacher prompt) in SQLite: a resumed or
    repeated training run asks the server only for pairs it has not scored."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS score (key TEXT PRIMARY KEY, "
                         "logprobs TEXT NOT NULL)")
        self._lock = threading.Lock()

    @staticmethod
    def key(question: str, passage_id: str, answer: str, model: str, template: str) -> str:
        return json.dumps([question, passage_id, answer, model, template])

    def get(self, key: str) -> list[float] | None:
        with self._lock:
            row = self._db.execute("SELECT logprobs FROM score WHERE key = ?", (key,)).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put(self, key: str, logprobs: list[float]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO score VALUES (?, ?)",
                             (key, json.dumps(logprobs)))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM score").fetchone()[0])


async def answer_logprobs(lm: Any, cache: ScoreCache, question: str, answer: str,
                          passages: Sequence[tuple[str, str]],
                          template: str = TEACHER_PROMPTS["qa"]
                          ) -> tuple[list[list[float]], int]:
    """The token log-probabilities of ANSWER after each (id, text) passage and QUESTION (put in
    TEMPLATE), and how many the server had to score (the rest came from CACHE)."""
    answer = answer.strip()
    keys = [cache.key(question, pid, answer, lm.model, template) for pid, _ in passages]
    found = [cache.get(k) for k in keys]
    todo = [i for i, f in enumerate(found) if f is None]
    if todo:
        y = await lm.tokenize(" " + answer)
        prompts = await asyncio.gather(*[
            lm.tokenize(template.format(passage=passages[i][1], question=question))
            for i in todo])
        scored = await asyncio.gather(*[lm.score(p, y) for p in prompts])
        for i, values in zip(todo, scored, strict=True):
            cache.put(keys[i], values)
            found[i] = values
    return [list(f) for f in found if f is not None], len(todo)


# ---------------------------------------------------------------------------------------------
# Training


@dataclass
class Retrieved:
    """One question's passages in an epoch: ids, texts, titles, stored embeddings, LM scores."""

    ids: list[str]
    texts: list[str]
    titles: list[str]
    vectors: Any = None
    """The passages' stored (frozen) embeddings, [k, dim]."""
    lm: list[float] = field(default_factory=list)


@dataclass
class TrainReport:
    steps: int
    epochs: int
    questions: int
    losses: list[float]
    scored_pairs: int
    cached_pairs: int
    resumed_from: int | None
    out: str


def _embed(model: Any, texts: list[str]) -> Any:
    """Unit-length query vectors with gradients."""
    import torch

    prepare = getattr(model, "preprocess", None) or model.tokenize  # renamed in v5.3
    features = prepare(texts)
    out = model(features)["sentence_embedding"]
    return torch.nn.functional.normalize(out, dim=-1)


class PassageIndex:
    """Every passage of the collection with vectors from one state of the tower, searched
    exactly in memory (what training with re-embedding retrieves from)."""

    def __init__(self, docs: list[Any], vectors: Any, step: int = 0) -> None:
        import numpy as np

        self.docs = docs
        self.step = step
        """The training step whose tower embedded the passages."""
        self.vectors = np.asarray(vectors, np.float32)
        self.row = {d.id: i for i, d in enumerate(docs)}

    def search_vectors(self, queries: Any, k: int) -> list[list[tuple[Any, float, Any]]]:
        import numpy as np

        scores = np.asarray(queries, np.float32) @ self.vectors.T
        k = min(k, len(self.docs))
        out = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k]
            top = top[np.argsort(-row[top], kind="stable")]
            out.append([(self.docs[i], float(row[i]), self.vectors[i]) for i in top])
        return out

    def embeddings(self, ids: list[str]) -> Any:
        import numpy as np

        return np.stack([self.vectors[self.row[i]] for i in ids])


def _save_encoder(model: Any, out: Path, meta: dict[str, Any]) -> None:
    model.save(str(out))
    (out / "lsr.json").write_text(json.dumps(meta, indent=1))


class Trainer:
    """Trains a copy of the collection's MiniLM as a query tower against a served LM."""

    def __init__(self, corpus: Any, lm: Any, out: Path, config: LSRConfig,
                 cache: ScoreCache, progress: bool = True) -> None:
        config.check()
        self.corpus, self.lm, self.out, self.config = corpus, lm, out, config
        self.cache = cache
        self.progress = progress
        self.chroma = corpus.chroma
        if len(self.chroma) == 0:
            raise ActiveRagError(f"the corpus at {corpus.path} has no dense passages; ingest it "
                                 "without --no-dense before training a query encoder")
        if config.k > len(self.chroma):
            raise ActiveRagError(f"k={config.k} but the corpus holds {len(self.chroma)} "
                                 "passages; lower --k")
        self.index: PassageIndex | None = None
        """With re-embedding: the passages under the tower of the current round."""
        self._base: PassageIndex | None = None

    @property
    def checkpoint(self) -> Path:
        return self.out / "checkpoint.pt"

    def _retrieve(self, model: Any, examples: list[Example]) -> list[Retrieved]:
        import numpy as np

        vectors = unit_vectors(model, [e.question for e in examples])
        lm_task = self.config.task == "lm"
        depth = self.config.k + (20 if lm_task else 0)
        out = []
        searched = self.index or self.chroma
        for i in range(0, len(examples), 64):
            rows = searched.search_vectors(vectors[i:i + 64], depth)
            for e, hits in zip(examples[i:i + 64], rows, strict=True):
                if lm_task:  # never a passage of x's own title
                    hits = [h for h in hits if h[0].metadata.get("title", "") not in
                            e.gold_titles]
                hits = hits[:self.config.k]
                out.append(Retrieved([d.id or "" for d, _, _ in hits],
                                     [d.page_content for d, _, _ in hits],
                                     [d.metadata.get("title", "") for d, _, _ in hits],
                                     np.stack([v for _, _, v in hits])))
        return out

    def _score(self, examples: list[Example], found: list[Retrieved]) -> tuple[int, int]:
        """LM scores for each question's passages (from the cache where it has them)."""
        from tqdm import tqdm

        async def run() -> tuple[int, int]:
            sem = asyncio.Semaphore(4)
            bar = tqdm(total=len(examples), desc="LM scores", unit=" q", file=sys.stderr,
                       disable=not self.progress)
            counts = [0, 0]

            async def one(e: Example, r: Retrieved) -> None:
                async with sem:
                    values, asked = await answer_logprobs(
                        self.lm, self.cache, e.question, e.answers[0],
                        list(zip(r.ids, r.texts, strict=True)),
                        TEACHER_PROMPTS[self.config.task])
                r.lm = [lm_score(v, self.config.lm_score) for v in values]
                counts[0] += asked
                counts[1] += len(values) - asked
                bar.update(1)

            await asyncio.gather(*[one(e, r) for e, r in zip(examples, found, strict=True)])
            bar.close()
            return counts[0], counts[1]

        return asyncio.run(run())

    def train(self, examples: list[Example], resume: bool = True,
              stop_after: int | None = None) -> TrainReport:
        """Train on EXAMPLES (resuming from OUT's checkpoint when RESUME), save the encoder in
        OUT and report. STOP_AFTER steps, the run checkpoints and returns early, as if it had
        been interrupted there (the next call resumes)."""
        import torch
        from sentence_transformers import SentenceTransformer
        from tqdm import tqdm

        from activerag.stores.chroma import _dimension, minilm_path

        cfg = self.config
        if not examples:
            raise ActiveRagError("no training questions")
        torch.manual_seed(cfg.seed)
        self.out.mkdir(parents=True, exist_ok=True)
        model = SentenceTransformer(str(minilm_path()), device="cpu")
        if _dimension(model) != self.chroma.dimension():
            raise ActiveRagError("the collection's embeddings do not have MiniLM's dimension; "
                                 "re-ingest the corpus with this version")
        if cfg.reembed_every:
            self._base = PassageIndex(*self.chroma.passages())
        per_epoch = math.ceil(len(examples) / cfg.batch)
        total = per_epoch * cfg.epochs
        optimiser = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: lr_factor(s, total, cfg.warmup))
        step, losses, resumed = 0, [], None
        ids = [e.id for e in examples]
        if resume and self.checkpoint.exists():
            state = torch.load(self.checkpoint, weights_only=False)
            written = {**asdict(LSRConfig()), **state["config"]}  # settings added since
            if written != asdict(cfg) or state["questions"] != ids:
                raise ActiveRagError(
                    f"{self.checkpoint} was written with other settings or questions; use the "
                    "same ones to resume, or another --out (or delete it) to start afresh")
            model.load_state_dict(state["model"])
            optimiser.load_state_dict(state["optimiser"])
            schedule.load_state_dict(state["schedule"])
            torch.set_rng_state(state["rng"])
            step, losses, resumed = state["step"], state["losses"], state["step"]
            print(f"resuming from step {step} of {total}", file=sys.stderr)

        def save(step: int) -> None:
            torch.save({"model": model.state_dict(), "optimiser": optimiser.state_dict(),
                        "schedule": schedule.state_dict(), "step": step, "losses": losses,
                        "config": asdict(cfg), "questions": ids,
                        "rng": torch.get_rng_state()},
                       self.checkpoint.with_suffix(".tmp"))
            self.checkpoint.with_suffix(".tmp").replace(self.checkpoint)

        bar = tqdm(total=total, initial=step, desc="train", unit=" step", file=sys.stderr,
                   disable=not self.progress)
        try:
            step, scored, cached = self._loop(model, optimiser, schedule, examples, step, losses,
                                              total, per_epoch, save, bar, stop_after)
        except KeyboardInterrupt:
            raise ActiveRagError(f"training interrupted; run the same command again to resume "
                                 f"from the last checkpoint ({self.checkpoint})") from None
        finally:
            bar.close()
        if step < total:
            return TrainReport(step, cfg.epochs, len(examples), losses, scored, cached, resumed,
                               str(self.out))
        _save_encoder(model, self.out, {"config": asdict(cfg), "steps": step,
                                        "questions": len(examples), "base": "all-MiniLM-L6-v2",
                                        "lm": self.lm.model,
                                        "teacher_prompt": TEACHER_PROMPTS[cfg.task],
                                        "losses": losses})
        if cfg.reembed_every:
            self._write_index(model)
        return TrainReport(step, cfg.epochs, len(examples), losses, scored, cached, resumed,
                           str(self.out))

    def _loop(self, model: Any, optimiser: Any, schedule: Any, examples: list[Example],
              step: int, losses: list[float], total: int, per_epoch: int, save: Any, bar: Any,
              stop_after: int | None) -> tuple[int, int, int]:
        import numpy as np
        import torch

        cfg = self.config
        scored = cached = 0
        while step < total:
            epoch, first, end = training_round(step, per_epoch, cfg.reembed_every)
            if cfg.reembed_every:
                self.index = self._index_at(model, first // cfg.reembed_every * cfg.reembed_every)
            order = list(range(len(examples)))
            random.Random(cfg.seed * 1000 + epoch).shuffle(order)
            start = epoch * per_epoch
            used = sorted(i for b_i in range(first - start, end - start)
                          for i in order[b_i * cfg.batch:(b_i + 1) * cfg.batch])
            found = self._round_passages(model, examples, epoch, first - start)
            a, b = self._score([examples[i] for i in used], [found[i] for i in used])
            scored, cached = scored + a, cached + b
            if cfg.teacher == "shuffled":
                for i in used:
                    tag = f"{epoch}" if first == start else f"{epoch}/{first}"
                    random.Random(f"{cfg.seed}/{tag}/{i}").shuffle(found[i].lm)
            model.train()
            for b_i in range(step - start, end - start):
                batch = order[b_i * cfg.batch:(b_i + 1) * cfg.batch]
                docs = torch.from_numpy(np.stack([found[i].vectors for i in batch]))
                q = _embed(model, [examples[i].question for i in batch])
                s = torch.einsum("bd,bkd->bk", q, docs)
                lm = torch.tensor([found[i].lm for i in batch])
                loss = lsr_loss(s, lm, cfg.gamma, cfg.beta, cfg.direction)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                schedule.step()
                step += 1
                losses.append(float(loss.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{sum(losses[-10:]) / len(losses[-10:]):.3f}")
                if step % cfg.checkpoint_every == 0 or step == end:
                    save(step)
                if stop_after is not None and step >= stop_after:
                    save(step)
                    return step, scored, cached
            model.eval()
        return step, scored, cached

    def _round_passages(self, model: Any, examples: list[Example], epoch: int, offset: int,
                        ) -> list[Retrieved]:
        """The round's passages per question: retrieved with the encoder as the round began
        (OFFSET steps into EPOCH) and kept in a file, so a resumed round trains on the passages
        it started with."""
        name = f"epoch-{epoch}" + (f"-step-{offset}" if offset else "")
        path = self.out / f"{name}.json"
        if path.exists():
            rows = json.loads(path.read_text())
            vectors = (self.index or self.chroma).embeddings([i for r in rows for i in r["ids"]])
            found, start = [], 0
            for r in rows:
                found.append(Retrieved(r["ids"], r["texts"], r["titles"],
                                       vectors[start:start + len(r["ids"])]))
                start += len(r["ids"])
            return found
        model.eval()
        found = self._retrieve(model, examples)
        path.write_text(json.dumps([{"ids": r.ids, "texts": r.texts, "titles": r.titles}
                                    for r in found]))
        return found

    def _index_at(self, model: Any, step: int) -> PassageIndex:
        """The passages as the tower embedded them at STEP (a multiple of T; 0: the collection's
        own embeddings), kept in a file so that a resumed run searches what it searched."""
        import numpy as np

        assert self._base is not None
        if step == 0:
            return self._base
        if self.index is not None and self.index.step == step:
            return self.index
        path = self.out / f"index-step-{step}.npy"
        if path.exists():
            vectors = np.load(path)
        else:
            print(f"re-embedding {len(self._base.docs)} passages at step {step}", file=sys.stderr)
            model.eval()
            vectors = unit_vectors(model, [d.page_content for d in self._base.docs],
                                   self.progress)
            with open(path.with_suffix(".tmp"), "wb") as f:
                np.save(f, vectors)
            path.with_suffix(".tmp").replace(path)
        return PassageIndex(self._base.docs, vectors, step)

    def _write_index(self, model: Any) -> None:
        """The passages under the trained tower, as the Chroma collection its folder searches."""
        from activerag.stores.chroma import INDEX_FOLDER, ChromaStore

        assert self._base is not None
        print(f"re-embedding {len(self._base.docs)} passages with the trained tower",
              file=sys.stderr)
        model.eval()
        vectors = unit_vectors(model, [d.page_content for d in self._base.docs], self.progress)
        store = ChromaStore(self.out / INDEX_FOLDER)
        if len(store):  # written by an earlier run of the same command: write it again whole
            store.client.delete_collection(store.collection.name)
            store = ChromaStore(self.out / INDEX_FOLDER)
        store.add_embedded(self._base.docs, vectors)


# ---------------------------------------------------------------------------------------------
# Gold-title recall of a retriever


def title_recall(titles: Sequence[str], gold: Sequence[str]) -> float:
    """Share of GOLD titles among TITLES (0 when there is no gold title)."""
    if not gold:
        return 0.0
    have = set(titles)
    return sum(1 for g in set(gold) if g in have) / len(set(gold))


def recall_at(store: Any, examples: Sequence[Example], ks: Sequence[int],
              encoder: Any = None) -> dict[int, list[float]]:
    """Gold-title recall@k of each example for each k, searching with ENCODER's vectors (a
    QueryEncoder) or the collection's own encoder."""
    top = max(ks)
    if encoder is None:
        hits = [[d.metadata.get("title", "") for d, _ in store.search(e.question, top)]
                for e in examples]
    else:
        vectors = encoder.encode([e.question for e in examples])
        hits = [[d.metadata.get("title", "") for d, _, _ in row]
                for row in store.search_vectors(vectors, top)]
    return {k: [title_recall(h[:k], e.gold_titles) for h, e in zip(hits, examples, strict=True)]
            for k in ks}
