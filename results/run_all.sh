#!/usr/bin/env bash
# The exact commands behind results/: 2WikiMultihopQA dev with the paper's exemplars, BM25 over
# the 6,119-paragraph 2Wiki corpus, SmolLM2-135M-Instruct on vLLM (CPU, float32), k=2.
# Prepare once: activerag serve; activerag ingest ../shared/data/2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json --store $STORE --no-dense
set -euo pipefail
STORE=${STORE:-$HOME/.cache/activerag/store-2wiki}
COMMON=(--dataset 2wiki --prompts paper --store "$STORE" --max-sentences 4 --max-answer-tokens 128)
# Issue 4: flare, single, none on 100 questions (no cache: wall times are live).
activerag eval "${COMMON[@]}" --n 100 --methods flare,single,none --concurrency 4 --run runs/2wiki-main-n100
# Issue 3: every other method of the family on the first 50 of those questions.
activerag eval "${COMMON[@]}" --n 50 --concurrency 4 --run runs/2wiki-family-n50 \
  --methods previous_window,previous_sentence,next_sentence,self_ask,flare_explicit,flare_combined,flare_instruct
# Sweeps (the cache serves requests shared between variants; their wall times are not live).
activerag sweep theta "${COMMON[@]}" --n 100 --concurrency 4 --out runs/sweeps
activerag sweep beta "${COMMON[@]}" --n 50 --concurrency 4 --out runs/sweeps
activerag sweep next_previous "${COMMON[@]}" --n 50 --concurrency 4 --out runs/sweeps
activerag sweep window "${COMMON[@]}" --n 50 --concurrency 4 --out runs/sweeps
# The peer, one question at a time.
python benchmarks/flarechain_compare.py --store "$STORE" --n 30 --out runs/flarechain
