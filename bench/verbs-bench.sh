#!/usr/bin/env bash
# Point-to-point bandwidth and latency of VerbsRuntime next to rdma-core's
# perftest (ib_send_bw, ib_send_lat) on the same device, in one run, two
# processes on this machine. Prints a table with the ratio VerbsRuntime/perftest.
# Usage: bench/verbs-bench.sh [DEVICE] (default: the first device; QP=uc|rc, ITERS=N)
# With no RDMA device it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
p2p=build/bench/verbs_p2p
qp=${QP:-uc}
iters=${ITERS:-2000}

if build/cli/meshinfer --version 2>/dev/null | grep -q "verbs transport not built"; then
  echo "verbs-bench: the verbs transport is not built here (no rdma-core headers): nothing to measure."
  exit 0
fi
[ -x "$p2p" ] || { echo "verbs-bench: $p2p missing: build first (make bench)" >&2; exit 1; }
device=${1:-$("$p2p" --list | head -n 1)}
if [ -z "$device" ]; then
  echo "verbs-bench: no RDMA device (ibv_get_device_list returned none): nothing to measure."
  echo "  Linux: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE, or a real RDMA NIC."
  exit 0
fi
command -v ib_send_bw >/dev/null && command -v ibv_devinfo >/dev/null || scripts/install-deps perftest ibverbs-utils

# perftest needs the IPv4-mapped GID's index on RoCE and Thunderbolt.
gid_index=$(ibv_devinfo -v -d "$device" | awk '/GID\[ *[0-9]+\]:.*ffff:/ { gsub(/[^0-9]/, "", $1); print $1; exit }')
perftest_args=(-d "$device" -c "${qp^^}" -n "$iters" -F)
[ -z "$gid_index" ] || perftest_args+=(-x "$gid_index")

# Runs a perftest server and client; prints the client's result row.
perftest() {
  local tool=$1 size=$2
  "$tool" "${perftest_args[@]}" -s "$size" >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  "$tool" "${perftest_args[@]}" -s "$size" 127.0.0.1 2>/dev/null | awk -v s="$size" '$1 == s { print; exit }'
  wait "$server" || true
}

verbs() {
  local mode=$1 size=$2 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local args=(--port "$port" --device "$device" --mode "$mode" --qp "$qp" --size "$size" --iters "$iters")
  "$p2p" --rank 1 "${args[@]}" &
  local peer=$!
  "$p2p" --rank 0 "${args[@]}" | awk '{ print $2 }'
  wait "$peer"
}

echo "device $device, $qp queue pairs, $iters iterations, 4 KiB frames"
echo
echo "| test | size (B) | VerbsRuntime | perftest | ratio |"
echo "|---|---|---|---|---|"
for size in 8 4096; do
  ours=$(verbs lat "$size")
  theirs=$(perftest ib_send_lat "$size" | awk '{ print $6 }')   # t_avg[usec]
  echo "| latency one-way (us) | $size | $ours | $theirs | $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }') |"
done
for size in 65536 1048576; do
  ours=$(verbs bw "$size")
  theirs=$(perftest ib_send_bw "$size" | awk '{ print $4 }')    # BW average[MB/sec]
  echo "| bandwidth (MB/s) | $size | $ours | $theirs | $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }') |"
done
