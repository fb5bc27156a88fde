#!/usr/bin/env bash
# Times the capacity-planning sweep of issue 8's bar: Qwen3-235B 8-bit over
# 1..7 nodes of 512/256 GB M3 Ultra mixes, three link types, tensor and
# pipeline parallel, on all cores. Prints the wall time and candidate counts.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/cli/meshinfer
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
"$bin" plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-512gb,m3-ultra-256gb --max-nodes 7 \
  --links tb5-rdma,tb5-tcp,10gbe --strategies tensor,pipeline --jobs "${JOBS:-$(nproc)}" --out "$out" > "$out/table.txt" || true
end=$(date +%s.%N)
python3 - "$out/plan.json" "$start" "$end" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
c = plan["candidates"]
sim = sum(1 for x in c if x["status"] == "simulated")
print(f"| candidates | simulated | dropped | wall s |\n|---|---|---|---|\n| {len(c)} | {sim} | {len(c) - sim} | {float(sys.argv[3]) - float(sys.argv[2]):.1f} |")
PY
