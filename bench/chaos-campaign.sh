#!/usr/bin/env bash
# Chaos campaigns on every recovery policy, one scenario each (the workload
# shortened to 2 requests of 16 output tokens so a seed takes a fraction of a
# second): every fault kind, random schedules, each seed judged by the
# invariants and the oracle. Prints one table, a row per policy; each
# campaign's JSON goes to $OUT_DIR (default: a temporary directory).
# Usage: bench/chaos-campaign.sh [SEEDS=10000] [JOBS=nproc]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10000}
jobs=${2:-$(nproc)}
bin=${MESHINFER:-build/cli/meshinfer}
out_dir=${OUT_DIR:-$(mktemp -d)}
command -v jq >/dev/null || { echo "chaos-campaign: needs jq (scripts/install-deps jq)" >&2; exit 1; }

declare -A scenario=(
  [fail-stop]=scenarios/ci/node-crash-fail-stop.json
  [replan]=scenarios/ci/node-crash-replan.json
  [reroute]=scenarios/ci/link-down-reroute.json
  [fallback]=scenarios/ci/rdma-failure-fallback.json
)
echo "| policy | seeds run | invariant violations | oracle violations | recoveries | mean recovery s | worst recovery s | throughput lost | failures by cause | wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for policy in fail-stop replan reroute fallback; do
  start=$(date +%s)
  "$bin" chaos "${scenario[$policy]}" --seeds "1..$seeds" --requests 2 --output-tokens 16 --jobs "$jobs" \
    --out "$out_dir/$policy" >"$out_dir/$policy.txt" || true
  jq -r --arg policy "$policy" --arg wall "$(($(date +%s) - start))" '
    "| \($policy) | \(.seeds_run) | \(.violations | length) | \(.oracle_violations | length) | \(.recoveries) | \(.mean_recovery_s * 1000 | round / 1000)"
    + " | \(.worst_recovery_s * 1000 | round / 1000) | \(.mean_throughput_lost * 1000 | round / 10)%"
    + " | \(.failed_by_cause | to_entries | map("\(.key): \(.value)") | join(", ") | if . == "" then "none" else . end)"
    + " | \($wall) |"' "$out_dir/$policy/campaign.json"
done
echo
echo "campaigns (JSON, and each table with its violations' replayable schedules): $out_dir"
