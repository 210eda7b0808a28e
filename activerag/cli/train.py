"""`activerag train-retriever`: REPLUG-LSR training, then gold-title recall before and after."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError
from activerag.settings import Settings


def train_retriever(args: argparse.Namespace, settings: Settings) -> int:
    from activerag import lsr
    from activerag.serving.lm import VLLMClient
    from activerag.serving.token_lm import VLLMTokens
    from activerag.stores.corpus import Corpus

    config = lsr.LSRConfig(k=args.k, gamma=args.gamma, beta=args.lm_beta, lm_score=args.lm_score,
                           direction=args.kl, lr=args.lr, batch=args.batch, epochs=args.epochs,
                           seed=args.seed, checkpoint_every=args.checkpoint_every, task=args.task,
                           teacher=args.teacher, reembed_every=args.reembed_every)
    config.check()
    store = Path(args.store_dir) if args.store_dir else settings.stores
    corpus = Corpus(store, settings.chroma_url)
    split = lsr.LMSplit() if args.task == "lm" else None
    examples, what, held_out = _training_data(args, corpus, split)
    url = args.base_url or settings.url
    lm = VLLMTokens(url, args.model or settings.model or VLLMClient(url).model)
    cache = lsr.ScoreCache(settings.home / "lsr-lm-scores.sqlite")
    out = Path(args.out)
    print(f"training a query encoder on {what}, k={config.k}, γ={config.gamma}, β={config.beta}, "
          f"{config.epochs} epochs of batch {config.batch}; LM {lm.model} at {url}",
          file=sys.stderr)
    report = lsr.Trainer(corpus, lm, out, config, cache).train(examples, resume=not args.fresh,
                                                               split=split)
    per = max(1, len(report.losses) // config.epochs)
    means = [sum(report.losses[i:i + per]) / len(report.losses[i:i + per])
             for i in range(0, len(report.losses), per)]
    print(f"trained {report.steps} steps; mean loss per epoch "
          f"{' -> '.join(f'{m:.3f}' for m in means)}; LM scored {report.scored_pairs} pairs, "
          f"{report.cached_pairs} from the cache; encoder in {out}")
    if not held_out:
        print("bits per byte with and without it: python -m benchmarks.quality.replug_lm --store "
              f"{store} --query-encoder {out}")
        return 0
    _recall_report(corpus, out, held_out)
    return 0


def _training_data(args: argparse.Namespace, corpus: Any, split: Any
                   ) -> tuple[list[Any], str, list[Any]]:
    """The training examples, what they are in words, and the held-out questions (none for
    the LM task, whose evaluation is benchmarks/quality/replug_lm.py's)."""
    from activerag import lsr
    from activerag.evaluation.datasets import twowiki

    if split is not None:
        examples = split.of(corpus.bm25.docs)[1][: args.n]
        return examples, (f"{len(examples)} corpus passages (first half x, second half y; none "
                          f"of the titles of the {split.held_out} passages "
                          f"benchmarks/quality/replug_lm.py evaluates with --seed {split.seed}, "
                          "a split "
                          "the encoder keeps)"), []
    examples = lsr.training_examples(args.n, args.seed)
    held_out = twowiki()[: args.eval_n]
    clash = lsr.overlap(examples, held_out)
    if clash:
        raise ActiveRagError(f"{clash} held-out questions are also training questions")
    return examples, f"{len(examples)} 2Wiki questions (none of them an evaluation question)", \
        held_out


def _recall_report(corpus: Any, out: Path, held_out: list[Any]) -> None:
    """Gold-title recall@k on HELD_OUT with MiniLM and with the encoder in OUT: printed, and
    written to OUT/recall.json and OUT/recall.md."""
    from activerag import lsr
    from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
    from activerag.stores.query_encoder import QueryEncoder

    ks = [k for k in (1, 2, 5, 10, 20) if k <= len(corpus.chroma)]
    before = lsr.recall_at(corpus.chroma, held_out, ks)
    encoder = QueryEncoder(out)
    after = lsr.recall_at(encoder.index() or corpus.chroma, held_out, ks, encoder)
    lines = [f"gold-title recall@k on the first {len(held_out)} 2Wiki questions (held out; mean, "
             "95% bootstrap interval, paired p)", "",
             "| k | MiniLM | LSR query encoder | p |", "|---|---|---|---|"]
    table = {}
    for k in ks:
        b, a = before[k], after[k]
        bl, bh = bootstrap_ci(b)
        al, ah = bootstrap_ci(a)
        pval = paired_permutation_p(a, b)
        table[k] = {"before": sum(b) / len(b), "before_ci": [bl, bh], "after": sum(a) / len(a),
                    "after_ci": [al, ah], "p": pval}
        lines.append(f"| {k} | {table[k]['before']:.3f} [{bl:.3f}, {bh:.3f}] | "
                     f"{table[k]['after']:.3f} [{al:.3f}, {ah:.3f}] | {pval:.3f} |")
    (out / "recall.json").write_text(json.dumps({"n": len(held_out), "recall": table},
                                                indent=1))
    (out / "recall.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
