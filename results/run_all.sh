#!/usr/bin/env bash
# The exact commands behind results/: 2WikiMultihopQA dev with the paper's exemplars, BM25 over
# the 6,119-paragraph 2Wiki corpus, SmolLM2-135M-Instruct on vLLM (CPU, float32), k=2, at most
# 4 sentences / 128 tokens per answer, 4 questions at a time, on a 2-core machine.
# Prepare once: activerag serve; activerag ingest ../shared/data/2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json --store $STORE --no-dense
set -euo pipefail
STORE=${STORE:-$HOME/.cache/activerag/store-2wiki}
COMMON=(--dataset 2wiki --prompts paper --store "$STORE" --max-sentences 4 --max-answer-tokens 128 --concurrency 4)
# flare, single, none on 100 questions; live (the cache only records, for the sweeps).
activerag eval "${COMMON[@]}" --n 100 --methods flare,single,none --cache --run runs/2wiki-main-n100
# Every other method of the family on the first 30 of those questions; live, no cache.
activerag eval "${COMMON[@]}" --n 30 --run runs/2wiki-family-n30 \
  --methods previous_window,previous_sentence,next_sentence,self_ask,flare_explicit,flare_combined,flare_instruct
# Sweeps: requests identical to earlier ones come from the cache, so their times are not live.
activerag sweep theta "${COMMON[@]}" --n 50 --cache --out runs/sweeps
activerag sweep theta "${COMMON[@]}" --n 100 --cache --out runs/sweeps-n100
activerag sweep beta "${COMMON[@]}" --n 30 --cache --out runs/sweeps
activerag sweep next_previous "${COMMON[@]}" --n 30 --cache --out runs/sweeps
activerag sweep window "${COMMON[@]}" --n 30 --cache --out runs/sweeps
# The peer, one question at a time.
python benchmarks/flarechain_compare.py --store "$STORE" --n 20 --out runs/flarechain
# Copy the summaries (no per-example outputs: they hold the datasets' questions) into results/.
python results/collect.py
