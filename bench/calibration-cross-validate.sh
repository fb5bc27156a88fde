#!/usr/bin/env bash
# Leave one model out: each stack's profile is fitted again to the other
# models' published rows, then predicts the held-out model's rows. Prints
# `meshinfer calibrate --cross-validate`'s table and fails when a stack's
# held-out error is past its bound. A few minutes on 2 cores, so it runs here
# and not in `make test` (which checks the committed profiles row by row).
# Usage: bench/calibration-cross-validate.sh [JOBS=nproc]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MESHINFER:-build/cli/meshinfer}
jobs=${1:-$(nproc)}
[ -x "$bin" ] || { echo "calibration-cross-validate: $bin missing: build first (make build)" >&2; exit 1; }

# Held out, as measured for reports/calibration.md (flow level): exo 4.1% mean, 10.7% worst (Llama-3.1-8B fp16
# prefill); llama.cpp 5.8% mean, 11.9% worst (Qwen3-235B over RPC on 2 nodes, the only model with
# multi-node llama.cpp rows). llama.cpp's bounds are issue 41's aim: 8% mean, no row over 15%.
declare -A mean_bound=([exo-tensor-rdma]=6.0 [llamacpp-rpc-tcp]=8.0)
declare -A worst_bound=([exo-tensor-rdma]=12.5 [llamacpp-rpc-tcp]=15.0)

out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
"$bin" calibrate scenarios/calibration/published.json --no-fit --cross-validate --jobs "$jobs" | tee "$out"
echo
echo "| stack | held-out mean | bound | worst | bound | verdict |"
echo "|---|---|---|---|---|---|"
status=0
for stack in "${!mean_bound[@]}"; do
  # "  mean absolute error: in-sample 2.0%, held out 5.3%; worst held out 11.7% (row)" under "STACK: leave one ..."
  line=$(awk -v s="$stack:" '$1 == s { found = 1 } found && /mean absolute error/ { print; exit }' "$out")
  mean=$(sed -E 's/.*held out ([0-9.]+)%;.*/\1/' <<<"$line")
  worst=$(sed -E 's/.*worst held out ([0-9.]+)%.*/\1/' <<<"$line")
  verdict=$(awk -v m="$mean" -v w="$worst" -v mb="${mean_bound[$stack]}" -v wb="${worst_bound[$stack]}" \
    'BEGIN { print (m != "" && w != "" && m <= mb && w <= wb) ? "ok" : "OVER" }')
  [ "$verdict" = ok ] || status=1
  echo "| $stack | ${mean:-?}% | ${mean_bound[$stack]}% | ${worst:-?}% | ${worst_bound[$stack]}% | $verdict |"
done
echo
echo "$(( $(date +%s) - start )) s on $jobs jobs"
exit $status
