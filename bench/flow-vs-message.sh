#!/usr/bin/env bash
# Every shipped scenario at the message level and at the flow level, side by
# side: wall time of each and their ratio, the largest relative difference of
# the figures CI holds to 2% (decode and prefill speed, TTFT and ITL p50/p99,
# detection, recovery and downtime), and whether the request outcomes and the
# recovery decisions are the same.
#   bench/flow-vs-message.sh            (uses $BUILD_DIR/cli/meshinfer, default build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
meshinfer="${BUILD_DIR:-$root/build}/cli/meshinfer"
[[ -x $meshinfer ]] || { echo "flow-vs-message: build $meshinfer first (make build)" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/flow-vs-message.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "| scenario | message s | flow s | speedup | largest difference | outcomes and decisions |"
echo "|---|---|---|---|---|---|"
for file in "$root"/scenarios/*.json "$root"/scenarios/ci/*.json; do
  name="$(basename "$file" .json)"
  [[ $name == scenario.schema ]] && continue
  for level in message flow; do
    start=$(date +%s.%N)
    "$meshinfer" run --quiet "$file" --level "$level" --out "$work/$name-$level" >/dev/null 2>&1 || true
    awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { print end - start }' >"$work/$name-$level.wall"
  done
  python3 - "$work/$name" "$name" <<'PY'
import json, sys
base, name = sys.argv[1:3]
message, flow = (json.load(open(f"{base}-{level}/report.json")) for level in ("message", "flow"))
walls = [float(open(f"{base}-{level}.wall").read()) for level in ("message", "flow")]
metrics = ["summary/decode_tokens_per_s", "summary/prefill_tokens_per_s", "summary/ttft_s/p50", "summary/ttft_s/p99",
           "summary/itl_s/p50", "summary/itl_s/p99", "faults/time_to_detect_s", "faults/time_to_recover_s",
           "faults/downtime_s"]
def at(report, path):
    for key in path.split("/"):
        report = report.get(key) if isinstance(report, dict) else None
    return report
worst, which = 0.0, "-"
for m in metrics:
    a, b = at(message, m), at(flow, m)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
        if abs(b - a) / abs(a) > worst:
            worst, which = abs(b - a) / abs(a), m.split("/", 1)[1]
outcomes = lambda r: [(q["status"], q["error"], q["tokens"]) for q in r["requests"]]
decisions = lambda r: sorted((e["kind"], e["target"], e["detail"]) for e in r["events"])
same = outcomes(message) == outcomes(flow) and decisions(message) == decisions(flow)
print(f"| {name} | {walls[0]:.2f} | {walls[1]:.2f} | {walls[0] / walls[1]:.2f} | {100 * worst:.3f}% ({which}) | "
      f"{'same' if same else 'DIFFER'} |")
PY
done
