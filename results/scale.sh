#!/usr/bin/env bash
# The commands behind results/breakdown.md, throughput.md and dense_ingest.md (issue #10), run
# one after another on the quiet 2-core machine with `activerag serve` and nothing else running
# (vLLM 0.32 on the CPU). breakdown.md and throughput.md are the default model's (issue #18, at
# 6e0d032 code, with the smaller sizes below: 8 and 12 questions, levels 1/4/8, 3 bare requests;
# SmolLM2's were 20 and 24 questions, levels up to 16); dense_ingest.md is issue #10's.
# faults.md and dev-server-load.md come from `python -m benchmarks.robustness.faults` and
# `python -m benchmarks.cost.dev_server_load`.
set -euo pipefail
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
STORE=${STORE:-$HOME/.cache/activerag/store-2wiki}
# The 2Wiki store predates the bm25s index; ingesting again adds no passage and builds it.
activerag ingest ../shared/data/2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json --store "$STORE"
python -m benchmarks.cost.breakdown --n 8 --store "$STORE" --out results/breakdown.md
python -m benchmarks.cost.throughput --n 12 --levels 1 4 8 --bare-streams 1 4 8 --bare-requests 3 \
  --store "$STORE" --out results/throughput.md
python -m benchmarks.cost.throughput --n 16 --levels 1 16 --bare-streams 1 16 --bare-requests 3 \
  --store "$STORE" --out results/throughput-c16.md
python -m benchmarks.cost.dense_ingest --passages 2000 --repeat 1 --full --out results/dense_ingest.md
