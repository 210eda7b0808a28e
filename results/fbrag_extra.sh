#!/usr/bin/env bash
# FB-RAG's ceilings and cost (issue #9), after results/fbrag.sh, with the same two servers.
set -euo pipefail
L=$HOME/.cache/activerag/longctx
for ds in hotpotqa 2wiki500; do
  python -m benchmarks.quality.fb_rag_oracle --dataset "$L/$ds-1500w.jsonl" --n "${N:-30}" \
    --out "runs/fbrag-oracle-$ds"
done
python -m benchmarks.cost.fb_rag_cost --n "${N_COST:-4}" | tee runs/fbrag-cost.md
# X = 1500 -> Y = 1000 over 3,000-word contexts (stage I then reads half of the context); the
# default model's run had its reader served with `activerag serve --max-model-len 8192`, so
# long_context's ~4,600-token prompts were not cut in the middle
[ -f "$L/hotpotqa-3000w.jsonl" ] || activerag longctx build --dataset hotpotqa --words 3000 --n 100
activerag eval --dataset "$L/hotpotqa-3000w.jsonl" --n "${N_3000:-15}" --concurrency 2 \
  --cache-samples --methods fb_rag,op_rag,long_context --recall-words 1500 --read-words 1000 \
  --run runs/fbrag-hotpotqa3000-y1000
