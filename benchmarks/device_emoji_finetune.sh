#!/bin/bash
# The emoji default finetuned on a GPU machine without DVC (how reports/emoji_finetune/ was measured).
#
# With DVC, the same runs are `dvc exp run -S dataset=emoji_finetune` (README, "The GPU path").
# This script runs the stage modules in dvc.yaml's order instead, for a lent GPU machine that has the image's
# python3 and the carried wheels but no dvc:
#
#   benchmarks/device_emoji_finetune.sh PARAMS LOGDIR
#
# PARAMS: a params file (e.g. `python -m pipeline.compose dataset=emoji_finetune --output PARAMS`, narrowed to the
# runs to train);
# data/prepared must hold the prepared emoji images. Every run's train stage starts at once (each trains its
# folds x seeds in train.workers processes, all on the one GPU), then evaluate. Per-stage logs and wall times
# go to LOGDIR.
set -u -o pipefail
params=$1
logs=$2
mkdir -p "$logs"
export PYTHONUNBUFFERED=1
runs=$(python3 -c "from pipeline.config import load_params; from pipeline.runs import all_runs; print(' '.join(all_runs(load_params('$params'))))") || exit 2
start=$(date +%s)
echo "runs: $runs" | tee -a "$logs/stages.txt"
pids=()
for run in $runs; do
  (s=$(date +%s)
   python3 -m stages.train --params "$params" --method "$run" --data data/prepared --features data/features \
     --out "data/models/$run" --train-logs "reports/train_logs/$run" --subproblems "reports/subproblems/$run" \
     > "$logs/train_$run.log" 2>&1
   echo "train $run rc=$? seconds=$(( $(date +%s) - s ))" >> "$logs/stages.txt") &
  pids+=($!)
done
wait "${pids[@]}"
s=$(date +%s)
python3 -m stages.evaluate --params "$params" --models data/models --out reports/metrics --spectra reports/spectra \
  --per-class reports/per_class > "$logs/evaluate.log" 2>&1
echo "evaluate rc=$? seconds=$(( $(date +%s) - s ))" >> "$logs/stages.txt"
echo "total seconds=$(( $(date +%s) - start ))" >> "$logs/stages.txt"
