#!/usr/bin/env bash
# Strangers during bootstrap, side by side with a clean start: a 4-rank
# `launch --hostfile` on loopback, RUNS times each way (default 5), while a
# stranger (python3) keeps connecting to the cluster's two ports and closing
# early, sending garbage or an oversized length, or staying silent. Prints,
# per way, the median time from launch to a formed cluster (the last rank's
# "joined" line), the requests completed and the connections refused.
#   bench/strangers.sh [RUNS]        (needs build/cli/meshinfer)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-5}"
bin="$root/build/cli/meshinfer"
work="$(mktemp -d)"
trap 'rm -rf "$work"; [[ -z ${stranger:-} ]] || kill "$stranger" 2>/dev/null || true' EXIT

cat >"$work/s.json" <<'JSON'
{"name": "strangers", "seed": 1,
 "cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb"}, {"name": "m2", "hardware": "m3-ultra-512gb"},
                       {"name": "m3", "hardware": "m3-ultra-512gb"}, {"name": "m4", "hardware": "m3-ultra-512gb"}],
             "fabric": {"type": "full-mesh", "link": "tb5-tcp"}},
 "model": {"name": "llama-3.2-3b", "quant": "8bit"}, "parallelism": "tensor",
 "workload": {"requests": 8, "prompt_tokens": 32, "output_tokens": 8},
 "recovery": {"policy": "replan", "heartbeat_s": 0.1, "heartbeat_timeout_s": 0.5}}
JSON

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cat >"$work/stranger.py" <<'PY'
import socket, struct, sys, time
ports = [int(p) for p in sys.argv[1:]]
held, turn = [], 0
while True:
    for port in ports:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
        except OSError:
            continue
        kind = turn % 4
        turn += 1
        try:
            if kind == 0: s.send(b"MIH")
            elif kind == 1: s.send(b"GET / HTTP/1.1\r\n\r\n" + b"\xff" * 100)
            elif kind == 2: s.send(struct.pack("<IIiIQ", 0x3146494d, 1, 3, 0, 1 << 63))
            else:
                held = (held + [s])[-16:]
                continue
        except OSError:
            pass
        s.close()
    time.sleep(0.01)
PY

# One launch; prints "formation_s completed refused".
one_run() {
  local with_stranger=$1 port dir start
  port=$(free_port)
  dir="$work/run-$RANDOM"
  mkdir -p "$dir"
  python3 - "$port" >"$dir/cluster.json" <<'PY'
import json, sys
port = int(sys.argv[1])
print(json.dumps({"transport": "tcp", "port": port,
                  "hosts": [{"ssh": "localhost", "ips": ["127.0.0.1"]}] * 4}))
PY
  stranger=""
  if ((with_stranger)); then
    python3 "$work/stranger.py" "$port" "$((port + 1))" &
    stranger=$!
  fi
  start=$(date +%s.%N)
  "$bin" launch "$work/s.json" --hostfile "$dir/cluster.json" --out "$dir/out" --timeout 120 >"$dir/log" 2>&1 || true
  [[ -z $stranger ]] || { kill "$stranger" 2>/dev/null || true; wait "$stranger" 2>/dev/null || true; }
  stranger=""
  python3 - "$dir" "$start" <<'PY'
import json, re, sys
d, start = sys.argv[1], float(sys.argv[2])
log = open(d + "/log").read()
zeros = [float(z) for z in re.findall(r"run clock zero at unix ([0-9.]+)", log)]
try:
    completed = json.load(open(d + "/out/report.json"))["summary"]["requests"]["completed"]
except (OSError, ValueError, KeyError):
    completed = 0
refused = len(re.findall(r": refused ", log))
print(f"{max(zeros) - start if zeros else float('nan'):.3f} {completed} {refused}")
PY
}

printf "%-16s %6s %18s %12s %10s\n" "start" "runs" "formation p50 (s)" "completed" "refused"
for way in 0 1; do
  results=()
  for ((i = 0; i < runs; ++i)); do results+=("$(one_run "$way")"); done
  printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
form = statistics.median(float(r[0]) for r in rows)
done = sum(int(r[1]) for r in rows)
refused = sum(int(r[2]) for r in rows)
name = "with strangers" if sys.argv[1] == "1" else "clean"
print(f"{name:<16} {len(rows):>6} {form:>18.3f} {done:>8}/{8 * len(rows):<3} {refused:>10}")
' "$way"
done
