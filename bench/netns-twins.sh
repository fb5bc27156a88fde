#!/usr/bin/env bash
# Every fault scenario of scenarios/ci, simulated and on real processes, side by side:
#   sudo bench/netns-twins.sh [RUNS]      (default 1 run of each)
# Each twin is the CI scenario with a tiny model (make-model), the workload and
# heartbeats of tests/netns/netns_twin_test.cpp; `launch --netns` runs it on a
# shaped namespace mesh and probes the mesh's link cards, and `run` simulates it
# on those cards. Prints, simulated | real: detection, downtime, requests
# completed/failed, decode speed, whether the token ids agree, and `compare`'s
# verdict (outcomes and decisions exact; speeds not judged, --relative 1).
# Uses $BUILD_DIR/cli/meshinfer (default build). Needs root, iproute2 and tc.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
meshinfer="${BUILD_DIR:-$root/build}/cli/meshinfer"
runs="${1:-1}"
[[ -x $meshinfer ]] || { echo "netns-twins: build $meshinfer first (make build)" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/netns-twins.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$meshinfer" make-model --out "$work/tiny" >/dev/null
echo "| scenario | run | detection s | downtime s | completed/failed | decode tok/s | tokens | compare |"
echo "|---|---|---|---|---|---|---|---|"
for file in "$root"/scenarios/ci/*.json; do
  name="$(basename "$file" .json)"
  python3 - "$file" "$work/$name.json" "$work/tiny" <<'PY' || continue
import json, sys
s = json.load(open(sys.argv[1]))
if not s.get("faults"):
    sys.exit(1)  # not a fault scenario
for key in ("$schema", "expect"):
    s.pop(key, None)
s["name"] = "twin-" + s["name"]
s["model"] = {"path": sys.argv[3]}
tokens = 150 if "secondary_link" in s["cluster"]["fabric"] else 400
s["workload"] = {"requests": 4, "prompt_tokens": 16, "output_tokens": tokens}
s.setdefault("recovery", {}).update({"heartbeat_s": 0.1, "heartbeat_timeout_s": 0.5})
s["deadline_s"] = 120
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
  for run in $(seq "$runs"); do
    out="$work/$name-$run"
    "$meshinfer" launch "$work/$name.json" --netns --out "$out/real" --timeout 150 >"$out.launch.log" 2>&1 || true
    if [[ ! -f $out/real/report.json ]]; then
      echo "| $name | $run | launch failed: $(tail -1 "$out.launch.log") | | | | | |"
      continue
    fi
    cards=()
    for card in "$out"/real/cards/*.json; do cards+=(--card "$card"); done
    "$meshinfer" run --quiet "$work/$name.json" "${cards[@]}" --out "$out/sim" >/dev/null 2>&1 || true
    verdict=agree
    "$meshinfer" compare --relative 1 "$out/sim/report.json" "$out/real/report.json" >"$out.compare" 2>&1 ||
      verdict="$(grep -c DIFFERS "$out.compare") rows differ"
    python3 - "$out/sim/report.json" "$out/real/report.json" "$out.compare" "$name" "$run" "$verdict" <<'PY'
import json, sys
sim, real = (json.load(open(f)) for f in sys.argv[1:3])
differ = "token ids differ" in open(sys.argv[3]).read()
def both(get, fmt):
    def one(r):
        v = get(r)
        return "never" if v is None else fmt.format(v)
    return f"{one(sim)} \\| {one(real)}"
print(f"| {sys.argv[4]} | {sys.argv[5]} "
      f"| {both(lambda r: r['faults']['time_to_detect_s'], '{:.3f}')} "
      f"| {both(lambda r: r['faults']['downtime_s'], '{:.3f}')} "
      f"| {both(lambda r: '{}/{}'.format(r['summary']['requests']['completed'], r['summary']['requests']['failed']), '{}')} "
      f"| {both(lambda r: r['summary']['decode_tokens_per_s'], '{:.1f}')} "
      f"| {'differ' if differ else 'equal'} | {sys.argv[6]} |")
PY
  done
done
