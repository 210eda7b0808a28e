#!/usr/bin/env bash
# The commands behind results/breakdown.md, throughput.md and dense_ingest.md (issue #10), run
# one after another on the quiet 2-core machine with `activerag serve` (SmolLM2-135M-Instruct,
# vLLM 0.32 on the CPU) and nothing else running. faults.md and dev-server-load.md come from
# `python benchmarks/faults.py` and `python benchmarks/dev_server_load.py`.
set -euo pipefail
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
STORE=${STORE:-$HOME/.cache/activerag/store-2wiki}
# The 2Wiki store predates the bm25s index; ingesting again adds no passage and builds it.
activerag ingest ../shared/data/2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json --store "$STORE"
python benchmarks/breakdown.py --n 20 --store "$STORE" --out results/breakdown.md
python benchmarks/throughput.py --n 24 --store "$STORE" --out results/throughput.md
python benchmarks/dense_ingest.py --passages 2000 --repeat 1 --full --out results/dense_ingest.md
