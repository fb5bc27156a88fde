#!/usr/bin/env bash
# A large chaos campaign on the default cluster and model (workload shortened
# to 2 requests of 16 output tokens so each seed takes a fraction of a second):
# every fault kind, random schedules, replan recovery. Prints the campaign
# table; the JSON goes to $OUT (default: a temporary file).
# Usage: bench/chaos-campaign.sh [SEEDS=10000] [JOBS=nproc]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10000}
jobs=${2:-$(nproc)}
bin=${MESHINFER:-build/cli/meshinfer}
out=${OUT:-$(mktemp --suffix=.json)}
start=$(date +%s)
"$bin" chaos scenarios/ci/node-crash-replan.json --seeds "1..$seeds" --requests 2 --output-tokens 16 \
  --jobs "$jobs" --out "$out" || true
echo "wall: $(( $(date +%s) - start )) s for $seeds seeds on $jobs jobs; campaign: $out"
