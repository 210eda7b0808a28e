#!/usr/bin/env bash
# FB-RAG's ceilings and cost (issue #9), after results/fbrag.sh, with the same two servers.
set -euo pipefail
L=$HOME/.cache/activerag/longctx
for ds in hotpotqa 2wiki500; do
  python benchmarks/fb_rag_oracle.py --dataset "$L/$ds-1500w.jsonl" --n "${N:-30}" \
    --out "runs/fbrag-oracle-$ds"
done
python benchmarks/fb_rag_cost.py --n "${N_COST:-4}" | tee runs/fbrag-cost.md
