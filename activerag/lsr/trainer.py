"""LSR's training loop: retrieve with the query tower as a round begins, score the passages with
the LM, step on the loss, checkpoint and resume; with re-embedding, the passages follow the
tower."""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example
from activerag.lsr import checkpoint as ckpt
from activerag.lsr.data import LMSplit
from activerag.lsr.index import PassageIndex, embed, index_at, write_collection
from activerag.lsr.objective import (
    TEACHER_PROMPTS,
    LSRConfig,
    lm_score,
    lr_factor,
    lsr_loss,
    training_round,
)
from activerag.lsr.scores import ScoreCache, answer_logprobs
from activerag.stores.embedding import unit_vectors


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

    def check_split(self, examples: list[Example], split: LMSplit | None
                    ) -> dict[str, Any] | None:
        """The record of SPLIT that the encoder keeps (the LM task), once every one of EXAMPLES
        is found in its training pool; None for the QA task, which has no split."""
        if self.config.task != "lm":
            if split is not None:
                raise ActiveRagError("the QA task needs no split; pass one only with task lm")
            return None
        if split is None:
            raise ActiveRagError("the LM task trains on the pool of an LMSplit; pass it, so "
                                 "that the encoder keeps which passages it held out")
        pool = {e.id for e in split.of(self.corpus.bm25.docs)[1]}
        outside = [e.id for e in examples if e.id not in pool]
        if outside:
            raise ActiveRagError(
                f"{len(outside)} training passages are held out by the split (or share a "
                f"held-out title), e.g. {', '.join(outside[:3])}; train on its pool, "
                "LMSplit(...).of(docs)[1]")
        return split.record(self.corpus.bm25.docs)

    def train(self, examples: list[Example], resume: bool = True,
              stop_after: int | None = None, split: LMSplit | None = None) -> TrainReport:
        """Train on EXAMPLES (resuming from OUT's checkpoint when RESUME), save the encoder in
        OUT and report. STOP_AFTER steps, the run checkpoints and returns early, as if it had
        been interrupted there (the next call resumes). The LM task trains on the pool of
        SPLIT, which the encoder's lsr.json keeps for the evaluation to check against."""
        import torch
        from sentence_transformers import SentenceTransformer
        from tqdm import tqdm

        from activerag.stores.embedding import minilm_path
        from activerag.stores.query_encoder import encoder_dimension

        cfg = self.config
        if not examples:
            raise ActiveRagError("no training questions")
        held_out = self.check_split(examples, split)
        torch.manual_seed(cfg.seed)
        self.out.mkdir(parents=True, exist_ok=True)
        model = SentenceTransformer(str(minilm_path()), device="cpu")
        if encoder_dimension(model) != self.chroma.dimension():
            raise ActiveRagError("the collection's embeddings do not have MiniLM's dimension; "
                                 "re-ingest the corpus with this version")
        if cfg.reembed_every:
            self._base = PassageIndex(*self.chroma.passages())
        per_epoch = math.ceil(len(examples) / cfg.batch)
        total = per_epoch * cfg.epochs
        optimiser = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: lr_factor(s, total, cfg.warmup))
        step, resumed, ids = 0, None, [e.id for e in examples]
        losses: list[float] = []
        if resume and self.checkpoint.exists():
            step, losses = ckpt.resume(self.checkpoint, cfg, ids, model, optimiser, schedule)
            resumed = step
            print(f"resuming from step {step} of {total}", file=sys.stderr)
        save = ckpt.saver(self.checkpoint, cfg, ids, model, optimiser, schedule, losses)
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
        ckpt.save_encoder(model, self.out, {"config": asdict(cfg), "steps": step,
                                            "questions": len(examples),
                                            "base": "all-MiniLM-L6-v2", "lm": self.lm.model,
                                            "teacher_prompt": TEACHER_PROMPTS[cfg.task],
                                            "losses": losses,
                                            **({"lm_split": held_out} if held_out else {})})
        if cfg.reembed_every:
            write_collection(self._base, model, self.out, self.progress)
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
                self.index = index_at(self._base, self.index, model,
                                      first // cfg.reembed_every * cfg.reembed_every,
                                      self.out, self.progress)
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
                q = embed(model, [examples[i].question for i in batch])
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
