#!/usr/bin/env bash
# FB-RAG's experiments (issues #9, #18): SmolLM2-135M samples (light, :8755), the default model
# Qwen2.5-Coder-0.5B-Instruct reads (strong, :8765). Start both first: `activerag serve` and
# `activerag serve --model smollm2-135m` (and `--model gemma-3-270m` for the light-model row).
# On the default model everything here ran with N=20 (Y = 1000, K and the Gemma row in a later
# session than Y = 500, alone on the machine). Tables: `python results/fbrag_report.py`.
# The light samples are remembered (--cache-samples): Ours-F, Ours-FB, Y = 1000 and K = 1..4 read
# the first K of the same K = 5 draw per question; the strong reader is always asked.
set -euo pipefail
N=${N:-30}
L=$HOME/.cache/activerag/longctx
[ -f "$L/hotpotqa-1500w.jsonl" ] || activerag longctx build --dataset hotpotqa --words 1500 --n 100
[ -f "$L/2wiki500-1500w.jsonl" ] || activerag longctx build --dataset 2wiki500 --words 1500 --n 100
ev() { activerag eval --concurrency 2 --cache-samples --n "$N" "$@"; }
for ds in hotpotqa 2wiki500; do
  D=$L/$ds-1500w.jsonl
  # X = 1500 -> Y = 500: FB-RAG first (it draws the samples), then the baselines
  ev --dataset "$D" --methods fb_rag,fb_rag_fb,op_rag,vanilla_rag,self_route,long_context \
     --read-words 500 --run "runs/fbrag-$ds-y500"
  ev --dataset "$D" --methods fb_rag,fb_rag_fb,op_rag --read-words 1000 --run "runs/fbrag-$ds-y1000"
  if [ "$ds" = hotpotqa ]; then
    for k in 1 2 3 4; do
      ev --dataset "$D" --methods fb_rag --samples "$k" --read-words 500 --run "runs/fbrag-$ds-k$k"
    done
  fi
done
# Gemma 3 270M as the light model too (Figure 3's light-model axis; issue #9's run had 15)
ev --dataset "$L/hotpotqa-1500w.jsonl" --methods fb_rag --n "${N_GEMMA:-$N}" \
   --light-url http://127.0.0.1:8775/v1 --light-format plain --read-words 500 \
   --run runs/fbrag-hotpotqa-gemma-light
