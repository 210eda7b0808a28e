#!/usr/bin/env bash
# The exact commands behind results/: 2WikiMultihopQA dev (file order) with the paper's exemplars,
# each exemplar carrying the 2 documents BM25 retrieves with its own question (Table 7), BM25 over
# the 6,119-paragraph 2Wiki corpus, k=2, θ=0.8, β=0.4, the last retrieved documents kept in later
# prompts (the authors' code), the default model (Qwen2.5-Coder-0.5B-Instruct since issue #18;
# tables not yet re-run say SmolLM2-135M-Instruct) on vLLM (CPU, float32, --max-model-len 4096),
# one answer cap for every method (128 tokens; each unit also stops at a blank line or a new
# "Question:", and the answer ends with its "So the answer is" sentence), 4 questions at a time
# on a 2-core machine.
# Prepare once:
#   activerag serve
#   activerag ingest ../shared/data/2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json --store $STORE --no-dense
set -euo pipefail
STORE=${STORE:-$HOME/.cache/activerag/store-2wiki}
COMMON=(--prompts paper --store "$STORE" --max-answer-tokens 128 --concurrency 4)
# flare, single, none on 200 questions, live (the cache only records, for the sweep).
activerag eval --dataset 2wiki "${COMMON[@]}" --n 200 --methods flare,single,none --cache \
  --run runs/2wiki-main-n200
# The demo set (24 two-hop and 24 one-hop questions over the shipped corpus), the library's own
# exemplar, reported per group.
activerag ingest --demo --store runs/demo-store
activerag eval --dataset demo --store runs/demo-store --max-answer-tokens 128 --concurrency 4 \
  --n 48 --methods flare,single,none --run runs/demo-n48
# The 1.5B model (issue #18: is it worth its cost?) on the same questions, single and none.
activerag serve --model qwen2.5-coder-1.5b
activerag eval --dataset demo --store runs/demo-store --max-answer-tokens 128 --concurrency 4 \
  --n 48 --methods single,none --run runs/demo-n48-1.5b --base-url http://127.0.0.1:8785/v1
# ... and flare_combined on the same questions (results/demo-n48-combined.md, by collect.py).
activerag eval --dataset demo --store runs/demo-store --max-answer-tokens 128 --concurrency 4 \
  --n 48 --methods flare_combined --run runs/demo-n48-combined
# β (Table 5) with per-token masking, whole-word masking, and whole-word masking that keeps the
# question's words (SmolLM2's sweep-beta-n100: every variant, `activerag sweep beta` without
# --variants; requests identical to the main run's came from the cache). On the default model (issue #18) Table 5's own points first: β 0, 0.2 and 0.6 per token (0.4 is
# FLARE's own row) and both masking options at β 0.4, beside the family runs below, 8 questions
# at a time; results/2wiki-beta-n100.* (python results/after_flare.py) and
# results/2wiki-table5-n100.* (python results/table5.py) read runs/sweeps-table5/beta.
ACTIVERAG_LM_TIMEOUT=3600 activerag sweep beta --dataset 2wiki --prompts paper --store "$STORE" \
  --max-answer-tokens 128 --concurrency 8 --n 100 --cache --out runs/sweeps-table5 \
  --variants "beta=0.0,beta=0.2,beta=0.6,beta=0.4 word,beta=0.4 word+x"
# ... and both masking options at β 0.2 and 0.6 (read by the same two reports).
ACTIVERAG_LM_TIMEOUT=3600 activerag sweep beta --dataset 2wiki --prompts paper --store "$STORE" \
  --max-answer-tokens 128 --concurrency 3 --n 100 --cache --out runs/sweeps-table5-options \
  --variants "beta=0.2 word,beta=0.6 word,beta=0.2 word+x,beta=0.6 word+x"
# Every other method of the family on the first 100 of the main run's questions (issue #18,
# default model; results/2wiki-family-n100.*, by results/after_flare.py, whose flare, none and
# single rows are those of 2wiki-after-flare-n100), a run folder per method, side by side on one
# server, 3 questions at a time each (self_ask, run at 99a2187 after its fix, 4);
# recorded in the cache, so the next/previous and window sweeps below reuse what they share.
# (SmolLM2's 2wiki-family-n50 was one folder at --n 50.) A busy server needs longer than the
# default 300 s.
for spec in flare_combined:combined previous_window:previous previous_sentence:previous-sentence \
            next_sentence:other self_ask:self-ask flare_instruct:instruct flare_explicit:explicit; do
  ACTIVERAG_LM_TIMEOUT=3600 activerag eval --dataset 2wiki --prompts paper --store "$STORE" \
    --max-answer-tokens 128 --concurrency 3 --n 100 --cache --methods "${spec%%:*}" \
    --run "runs/2wiki-family-n100-${spec#*:}" &
done
wait
# θ from 0 to 1 (Figure 5) on 100 questions; next vs previous sentence (Table 3) and the
# previous-window query length (Table 4) on 50.
activerag sweep theta --dataset 2wiki "${COMMON[@]}" --n 100 --cache --out runs/sweeps
activerag sweep next_previous --dataset 2wiki "${COMMON[@]}" --n 50 --cache --out runs/sweeps
activerag sweep window --dataset 2wiki "${COMMON[@]}" --n 50 --cache --out runs/sweeps
# REPLUG (Table 3 shape): no retrieval, the top document, 10 documents concatenated, REPLUG's
# token ensemble (agree mode) and the released code's vote, k=10; exemplars without documents
# (10 per exemplar would not fit 4,096 tokens), on the first 50 questions.
activerag eval --dataset 2wiki --prompts paper --no-exemplar-retrieval --store "$STORE" \
  --max-answer-tokens 128 --concurrency 4 --n 50 --run runs/2wiki-replug-n50 \
  --methods replug,none,single_k1,single_k10,replug_vote
# On the default model (issue #18): the same baselines and the vote on 100 questions, then
# REPLUG's token-level ensemble (agree mode, about 110 LM calls and a minute or more a question
# alone on 2 cores; run as 74 then 26 questions, the same command resumes it) in its own folder;
# results/2wiki-replug-n100.* by results/after_flare.py.
ACTIVERAG_LM_TIMEOUT=3600 activerag eval --dataset 2wiki --prompts paper --no-exemplar-retrieval \
  --store "$STORE" --max-answer-tokens 128 --concurrency 4 --n 100 --cache \
  --run runs/2wiki-replug-n100 --methods none,single_k1,replug_vote,single_k10
ACTIVERAG_LM_TIMEOUT=3600 activerag eval --dataset 2wiki --prompts paper --no-exemplar-retrieval \
  --store "$STORE" --max-answer-tokens 128 --concurrency 4 --n 100 --cache \
  --run runs/2wiki-replug-agree-n100 --methods replug
# REPLUG's rescore on the same questions (its echo requests bypass the prefix cache: about 100
# uncached prefills a question; this run was stopped after the first questions, and the table
# compares every method on those). A busy server needs longer than the default 300 s.
ACTIVERAG_LM_TIMEOUT=3600 activerag eval --dataset 2wiki --prompts paper --no-exemplar-retrieval \
  --store "$STORE" --max-answer-tokens 128 --concurrency 2 --n 50 \
  --run runs/2wiki-replug-rescore-n50 --methods replug_rescore
# REPLUG on HotpotQA over the 32,140-paragraph union corpus (BM25 only).
UNION=${UNION:-$HOME/.cache/activerag/store-union}
activerag ingest ../shared/data/corpus/union_wiki_paragraphs_dpr_format.tsv --store "$UNION" --no-dense
HOTPOT=(--dataset hotpotqa --prompts paper --no-exemplar-retrieval --store "$UNION"
        --max-answer-tokens 128 --concurrency 4 --n 50)
activerag eval "${HOTPOT[@]}" --run runs/hotpotqa-replug-n50 --methods none,single_k1,single_k10,replug_vote
activerag eval "${HOTPOT[@]}" --run runs/hotpotqa-replug-agree-n50 --methods replug
# REPLUG-LSR: train MiniLM's query tower from the LM's scores on 480 2Wiki questions that no
# evaluation uses (prints recall@k before and after on the first 200), a control whose LM
# scores are shuffled, the released code's vote and the top-1 document with the dense
# retriever before and after, and a query tower for the LM task (--task lm; its lr is 5x the
# paper's for 30 steps). The store needs its Chroma half: ingest without --no-dense.
activerag train-retriever --store "$STORE" --out runs/lsr-2wiki
# the control trains on the passages the LM-taught run retrieved in each epoch (its epoch files)
mkdir -p runs/lsr-2wiki-shuffled && cp runs/lsr-2wiki/epoch-*.json runs/lsr-2wiki-shuffled/
activerag train-retriever --store "$STORE" --out runs/lsr-2wiki-shuffled --teacher shuffled
DENSE=(--dataset 2wiki --prompts paper --no-exemplar-retrieval --store "$STORE"
       --max-answer-tokens 128 --concurrency 4 --n 50 --retriever chroma
       --methods replug_vote,single_k1)
activerag eval "${DENSE[@]}" --run runs/2wiki-replug-dense-vote-n50
activerag eval "${DENSE[@]}" --query-encoder runs/lsr-2wiki --run runs/2wiki-replug-lsr-vote-n50
activerag train-retriever --store "$STORE" --task lm --n 120 --epochs 2 --batch 8 --lr 1e-4 \
  --out runs/lsr-2wiki-lm
# REPLUG-LSR with the default model as the teacher, at a 2-core budget fixed before the run (160
# training questions, 3 epochs of batch 8: 60 steps), its shuffled control, and the top-1
# document with the dense retriever before and after on 100 questions (the vote, 10 answers of up
# to 128 tokens a question, was not affordable here); tables by results/lsr_report.py.
DENSE_STORE=${DENSE_STORE:-$HOME/.cache/activerag/store-2wiki-dense}
activerag ingest ../shared/data/2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json \
  --store "$DENSE_STORE"
LSR05=(--store "$DENSE_STORE" --n 160 --epochs 3 --batch 8)
activerag train-retriever "${LSR05[@]}" --out runs/lsr-2wiki-05b
mkdir -p runs/lsr-2wiki-05b-shuffled && cp runs/lsr-2wiki-05b/epoch-*.json runs/lsr-2wiki-05b-shuffled/
activerag train-retriever "${LSR05[@]}" --out runs/lsr-2wiki-05b-shuffled --teacher shuffled
# the same budget with SmolLM2-135M as the teacher (served on :8755): does the teacher matter?
activerag serve --model smollm2-135m
activerag train-retriever "${LSR05[@]}" --out runs/lsr-2wiki-smol160 --base-url http://127.0.0.1:8755/v1
DENSE05=(--dataset 2wiki --prompts paper --no-exemplar-retrieval --store "$DENSE_STORE"
         --max-answer-tokens 128 --concurrency 4 --n 100 --retriever chroma --cache
         --methods single_k1)
activerag eval "${DENSE05[@]}" --run runs/2wiki-dense-top1-05b-n100
activerag eval "${DENSE05[@]}" --query-encoder runs/lsr-2wiki-05b --run runs/2wiki-lsr-top1-05b-n100
python results/lsr_report.py --store "$DENSE_STORE"
# REPLUG's cost: token vs agree mode on demo questions, one at a time (same tokens).
python -m benchmarks.cost.replug_cost --n 6 --k 10 --lookahead 8 16 > runs/replug-cost.md
# REPLUG as a language model: bits per byte of held-out passages (Table 1 / Figure 4 shape);
# SmolLM2: --n 40; the default model (results/replug-lm.*): --n 20.
python -m benchmarks.quality.replug_lm --store "$STORE" --n 20 --concurrency 2 --out runs/replug-lm
# ... and with the dense retriever before and after LSR's LM task, on the first 24 of them.
python -m benchmarks.quality.replug_lm --store "$STORE" --n 24 --concurrency 4 --out runs/replug-lm-lsr \
  --dense --query-encoder runs/lsr-2wiki-lm
# The peer, one question at a time, with its own response prompt and with one the model can
# follow (both in one run).
# (SmolLM2 and the default model: --n 20, alone on the server; the default model at 6e0d032 code)
python -m benchmarks.cost.flarechain_compare --store "$STORE" --n 20 --out runs/flarechain
# FB-RAG: SmolLM2 samples (:8755), the default model reads (:8765) every table (issue #9's
# Gemma-read numbers stay in results/studies/fb-rag-smollm2-gemma.md). The smoke run (10 questions)
# first, then the tables: main (both datasets, Y = 500 and 1000, ceilings), K = 1..5, light
# model, cost, 3,000 words (the reader served with --max-model-len 8192 for that one).
# results/fbrag_report.py writes them.
activerag serve --model smollm2-135m
activerag serve --model gemma-3-270m  # only the light-model row of fbrag.sh samples with it
activerag longctx build --dataset hotpotqa --words 1500 --n 100
activerag eval --dataset "$HOME/.cache/activerag/longctx/hotpotqa-1500w.jsonl" --n 10 \
  --concurrency 2 --methods fb_rag,op_rag,long_context --run runs/fbrag-smoke-hotpot1500-n10
# N=20: the default model's main tables and ceilings (issue #9's Gemma runs had 30)
N=20 results/fbrag.sh
N=20 results/fbrag_extra.sh
python results/fbrag_report.py
# Scale (issue #10): BM25 at 32k-1M passages (bm25s index against rank-bm25) and the graph's
# overhead over a bare loop of the same LM calls; results/retrieval.md and overhead.md hold
# their tables.
python -m benchmarks.cost.retrieval
for l in 0.05 0.5; do python -m benchmarks.cost.overhead --questions 10 --latency "$l"; done
# Copy the summaries (no per-example outputs: they hold the datasets' questions) into results/.
python results/collect.py
# Issue #21: the uncertainty gates (thresholds fixed beforehand by benchmarks/quality/gate_thresholds.py
# on 40 questions of 2wiki500 that are not in this file), then ETC, DRAGIN-lite, IRCoT and
# FLARE + SeaKR-lite, on the first 100 of the main table's questions; the rows of flare,
# single and none are the main run's (results/2wiki-gates-n100.md, by collect.py). Without the
# main run's folder, the same three on these 100 questions alone (the same requests, the same
# answers):
#   activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --methods none,single --run runs/2wiki-main-n100
#   activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --methods flare --run runs/2wiki-flare-n100
activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --run runs/2wiki-gates-n100 \
  --methods gate_entropy_mean,gate_entropy_max,gate_perplexity,gate_lexsim
# One run folder per method group, the most wanted first (results/after_flare.py reads each):
# IRCoT, then DRAGIN-lite and ETC, then FLARE + SeaKR-lite.
for spec in ircot:ircot dragin_lite,flare_etc:dragin-etc flare_seakr:seakr; do
  activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --methods "${spec%%:*}" \
    --run "runs/2wiki-${spec#*:}-n100"
done
# Adaptive-RAG (issue #21): the router trained on 100 2Wiki training questions (none and single
# run; C, the fallback, needs no run), then both classifiers on the same 100 questions; the
# routed strategies' requests are the cache's (none, single from the main run, ircot above).
activerag train-router --out routers/2wiki-n100 --n 100 --concurrency 2 --cache \
  --prompts paper --store "$STORE" --max-answer-tokens 128
activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --run runs/2wiki-adaptive-n100 \
  --methods adaptive_rag,adaptive_rag_prompt --router routers/2wiki-n100
# (the prompt classifier needs no router; alone: --methods adaptive_rag_prompt
#  --run runs/2wiki-adaptive-prompt-n100)
# Each gate's threshold at the 10/25/75/90% quantiles of its estimator on the 40 calibration
# questions (results/gate_thresholds.json): nearly every request is the cache's (the gates'
# first passes, single's retrieval passes), so the 16 runs take about a second a question.
for spec in entropy_mean:0.187,0.25,0.57,0.757 entropy_max:1.857,1.958,2.521,2.944 \
            perplexity:0.102,0.118,0.329,0.473 lexsim:0.373,0.412,0.464,0.486; do
  est=${spec%%:*}; i=0
  for t in $(tr , " " <<< "${spec#*:}"); do
    q=(10 25 75 90); activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache \
      --methods gate_$est --gate-threshold "$t" --run runs/2wiki-gate-sweep-n100/$est-q${q[$i]}
    i=$((i + 1))
  done
done
# HotpotQA (issue #21): the first 100 of rpt's official dev split over the union corpus (ingested
# above), none, single, FLARE, IRCoT (its own HotpotQA exemplars) and the three new methods with
# the highest F1 on 2Wiki, with the 2Wiki runs' thresholds.
HOTPOT_AF=(--dataset hotpotqa --prompts paper --store "$UNION" --max-answer-tokens 128
           --concurrency 4 --n 100 --cache)
activerag eval "${HOTPOT_AF[@]}" --run runs/hotpotqa-n100 \
  --methods none,single,gate_entropy_max,gate_entropy_mean,adaptive_rag_prompt
activerag eval "${HOTPOT_AF[@]}" --run runs/hotpotqa-flare-n100 --methods flare
activerag eval "${HOTPOT_AF[@]}" --run runs/hotpotqa-ircot-n100 --methods ircot \
  --ircot-exemplars hotpotqa
# FLARE's θ on the same 100 questions (issue #21; 0.4 and 0.6 fixed before any of these runs,
# 0.2 and 1.0, the rest of `activerag sweep theta`'s grid, added after those two had been read,
# and 0.0 (issue #18) for Figure 5's left end; beside the main table's 0.8; each a full run, its
# first drafts from the cache). Figure 5 from them: python results/figure5.py
for t in 0.0 0.2 0.4 0.6 1.0; do
  activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --methods flare --theta $t \
    --run runs/2wiki-theta-sweep-n100/theta-$t
done
# ETC's and DRAGIN-lite's thresholds on the same questions (0.7 and 1.3 times their defaults,
# fixed before the runs).
for spec in flare_etc:etc:0.9 flare_etc:etc:1.7 dragin_lite:dragin:0.7 dragin_lite:dragin:1.3; do
  IFS=: read -r method flag t <<< "$spec"
  activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache --methods "$method" \
    "--$flag-threshold" "$t" --run "runs/2wiki-trigger-sweep-n100/$method-$t"
done
# n >= 200 (issue #21): none, single, FLARE, IRCoT and the best new method on 2Wiki (the first
# 100 of each come from the cache of the runs above).
activerag eval --dataset 2wiki "${COMMON[@]}" --n 200 --cache --run runs/2wiki-n200 \
  --methods none,single,flare,gate_entropy_max
activerag eval --dataset 2wiki "${COMMON[@]}" --n 200 --cache --run runs/2wiki-ircot-n200 \
  --methods ircot
# Every method side by side, the claims' verdicts and the Pareto plots
# (results/2wiki-after-flare-n100.*, results/hotpotqa-after-flare-n100.*,
#  results/2wiki-after-flare-n200.*)
python results/after_flare.py
# Issue #36: the engines (benchmarks/cost/engines.py writes results/engines*.md and .json; one server
# at a time, the machine otherwise quiet) and the exemplars with nothing to copy: the demo set
# on the 0.5B model on llama.cpp with the old exemplar (commit b773d72) and the new one.
python -m benchmarks.cost.engines --models qwen2.5-coder-0.5b --engines llama.cpp,vllm \
  --demo-on qwen2.5-coder-0.5b:llama.cpp --out results/engines-05b.md
python -m benchmarks.cost.engines --models qwen2.5-coder-1.5b --engines llama.cpp,vllm \
  --demo-on qwen2.5-coder-1.5b:llama.cpp --levels 1 4 8 --runs runs/engines-15b \
  --out results/engines-15b.md
# ... its llama.cpp demo rows again after the Punkt minimum (the machine quiet; the speeds of the
# server kept from the run above, as the report's note says)
python -m benchmarks.cost.engines --models qwen2.5-coder-1.5b --engines llama.cpp \
  --demo-on qwen2.5-coder-1.5b:llama.cpp --levels 1 4 8 --runs runs/engines-15b \
  --include results/engines-15b.json --out results/engines-15b.md
# vLLM's 0.5B on the first 24 demo questions, paired with llama.cpp's rows above (its report,
# which then crashed on 24 questions of one kind, was rebuilt from the kept run folders)
python -m benchmarks.cost.engines --models qwen2.5-coder-0.5b --engines vllm \
  --demo-on qwen2.5-coder-0.5b:vllm --levels 1 --n 24 --include results/engines-05b.json \
  --runs runs/engines-05b-vllm --out results/engines-05b-vllm.md
python -m benchmarks.cost.engines --models '' --include results/engines-05b.json \
  results/engines-15b.json results/engines-05b-vllm.json --out results/engines.md
activerag serve --engine llama.cpp
activerag eval --dataset demo --methods none,single,flare --n 48 --concurrency 4 --cache \
  --run runs/demo-llama05b-old-exemplars          # at commit b773d72
activerag eval --dataset demo --methods none,single,flare --n 48 --concurrency 4 --cache \
  --run runs/demo-llama05b-new-exemplars-docs
python results/exemplar_copies.py runs/demo-llama05b-old-exemplars \
  runs/demo-llama05b-new-exemplars-docs --out results/exemplar-copies.md
# Issue #37's client-side cut (stop 49): FLARE on the 48 demo questions on vLLM (the default
# 0.5B), the code before 956216c (a worktree) and after it, the same server; llama.cpp's client
# already found its stops itself
activerag serve --model qwen2.5-coder-0.5b --port 8766
# (a worktree on PYTHONPATH replaces only activerag/'s own modules: activerag.nodes, .graphs and
# .stores still load from the installed checkout, which is enough here, where 956216c changed
# activerag/serving alone; it does not pin a whole commit)
git worktree add /tmp/before-956216c 956216c^
for tree in before after; do
  PYTHONPATH=$([ $tree = before ] && echo /tmp/before-956216c) activerag eval --dataset demo \
    --max-answer-tokens 128 --concurrency 2 --n 48 --methods flare --run runs/stops-$tree \
    --base-url http://127.0.0.1:8766/v1
done
python -m benchmarks.cost.stop_holdback runs/stops-before runs/stops-after \
  --out results/stop-holdback.md
# Issue #37: the 1.5B reader on llama.cpp, the same questions and settings (4 slots), at the
# commit that scores IRCoT and Adaptive-RAG by their authors' rule; results/tables_15b.py puts
# each table beside the default model's (results/models-side-by-side.md).
activerag serve --engine llama.cpp --model qwen2.5-coder-1.5b --parallel 4  # 5 since stop 46
URL15=http://127.0.0.1:8785/v1
activerag eval --dataset demo --store runs/demo-store --max-answer-tokens 128 --concurrency 4 \
  --n 48 --methods flare,single,none,flare_combined --run runs/demo-n48-15b --base-url $URL15
# the 2Wiki main table: the three methods side by side (flare 2 at a time, the others 1), so
# that a run stopped early leaves the same first questions done by all three
for spec in flare:2 single:1 none:1; do
  activerag eval --dataset 2wiki "${COMMON[@]}" --n 200 --concurrency "${spec#*:}" --cache \
    --methods "${spec%%:*}" --run "runs/2wiki-main-n200-15b-${spec%%:*}" --base-url $URL15 &
done
wait
# the after-FLARE table on HotpotQA (the 0.5B's methods and settings, over the union store
# ingested above): the one-request methods and the gates in one run, FLARE beside them, then
# IRCoT with its own HotpotQA exemplars
H15=(--dataset hotpotqa --prompts paper --store "$UNION" --max-answer-tokens 128 --n 100
     --cache --base-url $URL15)
activerag eval "${H15[@]}" --concurrency 2 --run runs/hotpotqa-n100-15b \
  --methods none,single,gate_entropy_max,gate_entropy_mean,adaptive_rag_prompt &
activerag eval "${H15[@]}" --concurrency 2 --run runs/hotpotqa-flare-n100-15b --methods flare &
wait
activerag eval "${H15[@]}" --concurrency 4 --run runs/hotpotqa-ircot-n100-15b --methods ircot \
  --ircot-exemplars hotpotqa
# ETC, DRAGIN-lite and SeaKR-lite, which the issue's table 3 lists beside them (stop 49 on),
# with none and single again to pair them with (the run folders above are gone), and FLARE
# again from stop 51 (their papers' baseline). To keep a whole commit under runs that outlive
# the checkout's changes: a worktree installed in a venv of its own that borrows the main
# venv's packages
#   python -m venv V && echo "$PWD/.venv/lib/python3.11/site-packages" > V/lib/python3.11/site-packages/deps.pth
#   V/bin/pip install --no-deps -e WORKTREE   # then V/bin/activerag eval ...
# Stops 49-50 ran one process a method, one question at a time each; from stop 51 on, one
# method at a time, 3 questions at a time: SeaKR-lite alone then took about 1.5-2.5 min a
# question, against 4 questions in 30 min beside the other four (likely the
# five methods' prompts displacing each other from the server's 5 slots' prefix caches; not
# measured apart). Stopped by hand in rounds (every method to 27, 41, 60, 80, then 100
# questions) so that the questions all six share grow together; the loop below runs the same
# commands straight through (greedy, though llama.cpp's batches may change a rare token).
for m in flare_seakr flare flare_etc dragin_lite none single; do
  ACTIVERAG_LM_TIMEOUT=3600 activerag eval "${H15[@]}" --concurrency 3 \
    --run "runs/hotpotqa-t3-15b-$m" --methods $m
done
python results/t3_15b.py   # results/hotpotqa-t3-n100-15b.*, on the questions all six finished
# FB-RAG (table 5): the 1.5B reads (strong, :8785), the 0.5B on llama.cpp draws the light samples
# (`activerag serve --engine llama.cpp`, :8765); 20 questions of each dataset's 1,500-word
# contexts (built above by results/fbrag.sh), two at a time, alone on the machine
for ds in hotpotqa 2wiki500; do
  activerag eval --dataset "$HOME/.cache/activerag/longctx/$ds-1500w.jsonl" --n 20 \
    --concurrency 2 --cache-samples --read-words 500 --strong-url $URL15 \
    --light-url http://127.0.0.1:8765/v1 --run "runs/fbrag-$ds-y500-15b" \
    --methods fb_rag,fb_rag_fb,op_rag,vanilla_rag,self_route,long_context
done
# Stop 49: both again with the reader's prompt cache off (a second 1.5B server on :8786), into
# -rerun folders whose rows tables_15b.py takes over the first runs' (the samples come from the
# sample cache, timed at their first draw). llama-server's prompt cache had let Ours-FB skip the
# prefill of the chunks Ours-F had just read (14 of 20 HotpotQA questions); 2Wiki's first run
# also shared the machine with a test run for part of fb_rag_fb and op_rag.
# 2Wiki: every method again; HotpotQA: Ours-FB alone (the one whose prompts had been sent before).
activerag serve --engine llama.cpp --model qwen2.5-coder-1.5b --port 8786 --no-prompt-cache
for spec in 2wiki500:fb_rag,fb_rag_fb,op_rag,vanilla_rag,self_route,long_context \
            hotpotqa:fb_rag_fb; do
  ds=${spec%%:*}
  activerag eval --dataset "$HOME/.cache/activerag/longctx/$ds-1500w.jsonl" --n 20 \
    --concurrency 2 --cache-samples --read-words 500 --strong-url http://127.0.0.1:8786/v1 \
    --light-url http://127.0.0.1:8765/v1 --run "runs/fbrag-$ds-y500-15b-rerun" \
    --methods "${spec#*:}"
done
python results/tables_15b.py  # or, with only FB-RAG's run folders at hand: --only-fb-rag
# FLARE against LangChain's FlareChain on the same llama-server (the 1.5B), retriever and 20
# 2Wiki questions, one question at a time (stop 46: beside a background mutant run); then with
# our exemplars off, as FlareChain sends none
ACTIVERAG_BASE_URL=$URL15 python -m benchmarks.cost.flarechain_compare --store "$STORE" --n 20 \
  --out runs/flarechain-15b
ACTIVERAG_BASE_URL=$URL15 python -m benchmarks.cost.flarechain_compare --store "$STORE" --n 20 \
  --prompts none --out runs/flarechain-15b-none
# REPLUG (table 4) with the 1.5B reader: the default model's settings (its 2Wiki table above), one
# run folder a method, one method at a time on a server with a slot per document (10), so that
# each document's prompt stays in its own slot's cache while the ensemble extends it; one
# question at a time for the vote and the ensemble (10 requests each at once), 3 for the others.
# Stopped in rounds like table 3's, so that the questions all five share grow together.
activerag serve --stop --port 8785
activerag serve --engine llama.cpp --model qwen2.5-coder-1.5b --parallel 10
# Rows finished on earlier machines (results/runs-15b/README.md): each loop below skips them.
mkdir -p runs && cp -rn results/runs-15b/2wiki-* runs/ 2>/dev/null || true
R15=(--dataset 2wiki --prompts paper --no-exemplar-retrieval --store "$STORE" --n 100
     --max-answer-tokens 128 --cache --base-url $URL15)
for spec in replug:1 replug_vote:1 single_k10:3 single_k1:3 none:3; do
  ACTIVERAG_LM_TIMEOUT=3600 activerag eval "${R15[@]}" --concurrency "${spec#*:}" \
    --run "runs/2wiki-replug-15b-${spec%%:*}" --methods "${spec%%:*}"
done
python results/judged_15b.py replug  # results/2wiki-replug-n100-15b.*, on the questions all five finished
# The FLARE family (table 6) with the 1.5B reader: the default model's family settings, one run
# folder a method, one method at a time (5 slots), 3 questions at a time.
activerag serve --stop --port 8785
activerag serve --engine llama.cpp --model qwen2.5-coder-1.5b --parallel 5
for m in flare none single previous_window previous_sentence next_sentence self_ask \
         flare_instruct flare_explicit flare_combined; do
  ACTIVERAG_LM_TIMEOUT=3600 activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache \
    --concurrency 3 --run "runs/2wiki-family-15b-$m" --methods $m --base-url $URL15
done
python results/judged_15b.py family  # results/2wiki-family-n100-15b.*, on the questions all ten finished
# FLARE's θ from 0 to 1 (Figure 5) on the same questions, after the family (θ = 0.8 is FLARE's
# own run: its requests come from the cache), p against θ = 0.8 and against the family's none.
# Its rows are kept like the runs' (results/runs-15b/sweeps-15b-theta); the sweep resumes them.
mkdir -p runs/sweeps-15b && cp -rn results/runs-15b/sweeps-15b-theta/. runs/sweeps-15b/theta 2>/dev/null || true
ACTIVERAG_LM_TIMEOUT=3600 activerag sweep theta --dataset 2wiki "${COMMON[@]}" --n 100 --cache \
  --concurrency 3 --out runs/sweeps-15b --base-url $URL15 \
  --variants "theta=0.8,theta=0.0,theta=0.2,theta=0.4,theta=0.6,theta=1.0"
python results/figure5.py 15b  # results/2wiki-theta-n100-15b.{md,json,png}, the θ that finished
# Table 3 on 2Wiki with the 1.5B reader (the issue's "also on 2Wiki if time allows"): the methods
# after FLARE that table 6 lacks, the default model's settings (ETC and DRAGIN-lite now with
# their authors' k and document handling), one run folder a method, 3 questions at a time:
# IRCoT and the two gates straight to 100, then the other three in rounds of 20 questions
# (stopped by hand); none, single and FLARE are table 6's runs.
# SeaKR-lite (1.5-2.5 min a question on HotpotQA) is left out.
for m in ircot gate_entropy_max gate_entropy_mean flare_etc dragin_lite adaptive_rag_prompt; do
  ACTIVERAG_LM_TIMEOUT=3600 activerag eval --dataset 2wiki "${COMMON[@]}" --n 100 --cache \
    --concurrency 3 --run "runs/2wiki-t3-15b-$m" --methods $m --base-url $URL15
done
python results/judged_15b.py after  # results/2wiki-after-flare-n100-15b.*, on the questions all nine share
# Issue #56: every second of a question accounted for, on the default server (llama.cpp, the
# 1.5B, 10 slots), one question at a time, 2Wiki dev from #0, the paper's exemplars (and none,
# flare:none), BM25 k=2, θ=0.8, 128 answer tokens; FlareChain with both its prompts on the same
# server and retriever. A fresh server before each pass. "before" ran at 1d8c7f2 with only the
# per-request timings added (the pass of 20); "after" at 70dd046 (slots pinned, the draft kept
# when the retrieval brings back its own documents).
activerag serve --stop; activerag serve
ACTIVERAG_BASE_URL=http://127.0.0.1:8765/v1 python -m benchmarks.cost.accounting --store "$STORE" \
  --n 20 --out runs/accounting/before --label before
activerag serve --stop; activerag serve
ACTIVERAG_BASE_URL=http://127.0.0.1:8765/v1 python -m benchmarks.cost.accounting --store "$STORE" \
  --n 50 --methods flare,single,flare:none,flarechain-answer,flarechain-default \
  --out runs/accounting/after --label after
# ... FLARE's throughput at 4 and 8 questions at a time on the first 16 (a fresh server each)
for c in 4 8; do
  activerag serve --stop; activerag serve
  ACTIVERAG_BASE_URL=http://127.0.0.1:8765/v1 python -m benchmarks.cost.accounting --store "$STORE" \
    --n 16 --methods flare --concurrency $c --out runs/accounting/after --label after
done
cp runs/accounting/before/questions.jsonl results/accounting-rows/before.jsonl
cp runs/accounting/after/questions.jsonl results/accounting-rows/after.jsonl
cp runs/accounting/after/passes.jsonl results/accounting-rows/after-passes.jsonl
python -m benchmarks.cost.accounting_report results/accounting-rows/before.jsonl \
  results/accounting-rows/after.jsonl --passes results/accounting-rows/after-passes.jsonl \
  --out results/accounting

# Issue #57: `eval --ray`'s scheduler against a fake LM of fixed latency (no server needed), and
# the fault table's row h (a node of a 3-node Ray cluster lost mid-run, PostgreSQL checkpoints;
# a SmolLM2 CPU vLLM server and a throwaway PostgreSQL cluster of its own).
python -m benchmarks.cost.ray_scheduler
python -m benchmarks.cost.ray_scheduler --latency 1.0 --out results/ray-scheduler-1s.md
python -m benchmarks.robustness.fault_ray_eval
