#!/usr/bin/env bash
# Point-to-point latency and bandwidth of VerbsRuntime next to rdma-core's
# perftest (ib_send_lat, ib_send_bw) on the same device and next to the TCP
# transport on the same loopback, in one run, two processes on this machine,
# as ratios. By default on softrdma (preloaded, device rdma_lo), the device CI
# has; name a DEVICE (and SOFTRDMA=0) to measure a real NIC or Soft-RoCE.
# Usage: bench/verbs-bench.sh [DEVICE]   (QP=uc|rc, ITERS=N, SOFTRDMA=0|1)
set -euo pipefail
cd "$(dirname "$0")/.."
p2p=build/bench/verbs_p2p
qp=${QP:-uc}
iters=${ITERS:-2000}
softrdma=${SOFTRDMA:-1}

if build/cli/meshinfer --version 2>/dev/null | grep -q "verbs transport not built"; then
  echo "verbs-bench: the verbs transport is not built here (no rdma-core headers): nothing to measure."
  exit 0
fi
[ -x "$p2p" ] || { echo "verbs-bench: $p2p missing: build first (make bench)" >&2; exit 1; }
command -v ib_send_bw >/dev/null && command -v ibv_devinfo >/dev/null || scripts/install-deps perftest ibverbs-utils
if [ "$softrdma" = 1 ]; then
  lib=$PWD/build/hw/softrdma/libsoftrdma.so
  [ -f "$lib" ] || { echo "verbs-bench: $lib missing: build first" >&2; exit 1; }
  export LD_PRELOAD=$lib
fi
device=${1:-$([ "$softrdma" = 1 ] && echo rdma_lo || "$p2p" --list | head -n 1)}
if [ -z "$device" ]; then
  echo "verbs-bench: no RDMA device (ibv_get_device_list returned none): nothing to measure."
  echo "  Linux: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE, or a real RDMA NIC."
  exit 0
fi

# perftest needs the IPv4-mapped GID's index on RoCE and Thunderbolt.
gid_index=$(ibv_devinfo -v -d "$device" | awk '/GID\[ *[0-9]+\]:.*ffff:/ { gsub(/[^0-9]/, "", $1); print $1; exit }')
perftest_args=(-d "$device" -c "${qp^^}" -n "$iters" -F)
[ -z "$gid_index" ] || perftest_args+=(-x "$gid_index")
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A perftest server and client on the device: the client's output in $log/TOOL.client.
perftest_pair() {
  local tool=$1 size=$2 port
  shift 2
  port=$(free_port)
  timeout 60 env "$@" "$tool" "${perftest_args[@]}" -p "$port" -s "$size" >"$log/$tool.server" 2>&1 &
  local server=$!
  sleep 0.5
  timeout 60 env "$@" "$tool" "${perftest_args[@]}" -p "$port" -s "$size" 127.0.0.1 >"$log/$tool.client" 2>&1 || true
  wait "$server" || true
}

# perftest's result row for SIZE, or nothing (with why in $log/TOOL.why). On
# softrdma it first runs under macOS's rules, to record what they refuse, then
# with the allowances that lift those refusals.
perftest() {
  local tool=$1 size=$2 allow=()
  if [ "$softrdma" = 1 ]; then
    if [ ! -e "$log/$tool.refused" ]; then
      perftest_pair "$tool" "$size" SOFTRDMA_ALLOW=
      grep -h -o "softrdma: .* refused: [^(]*" "$log/$tool.server" "$log/$tool.client" | sort -u >"$log/$tool.refused" || true
    fi
    if [ -s "$log/$tool.refused" ]; then allow=(SOFTRDMA_ALLOW=recv-before-rts,local-write-mr); fi
  fi
  perftest_pair "$tool" "$size" "${allow[@]}"
  awk -v s="$size" '$1 == s { print; found = 1; exit } END { exit !found }' "$log/$tool.client" ||
    grep -h -m 1 -i -E "refused|fail|error|couldn't|unable" "$log/$tool.client" "$log/$tool.server" >"$log/$tool.why" || true
}

# One VerbsRuntime or TcpRuntime measurement between two processes.
p2p_run() {
  local transport=$1 mode=$2 size=$3 port
  port=$(free_port)
  local args=(--port "$port" --transport "$transport" --device "$device" --mode "$mode" --qp "$qp" --size "$size"
              --iters "$iters")
  "$p2p" --rank 1 "${args[@]}" &
  local peer=$!
  "$p2p" --rank 0 "${args[@]}" | awk '{ print $2 }'
  wait "$peer"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

echo "device $device$([ "$softrdma" = 1 ] && echo " (softrdma)"), $qp queue pairs, $iters iterations, 4 KiB frames"
echo
echo "| test | size (B) | VerbsRuntime | TCP transport | perftest | Verbs/perftest | Verbs/TCP |"
echo "|---|---|---|---|---|---|---|"
for size in 8 4096; do
  ours=$(p2p_run verbs lat "$size")
  tcp=$(p2p_run tcp lat "$size")
  theirs=$(perftest ib_send_lat "$size" | awk '{ print $6 }')   # t_avg[usec]
  echo "| latency one-way (us) | $size | $ours | $tcp | ${theirs:-n/a} | $(ratio "$ours" "$theirs") | $(ratio "$ours" "$tcp") |"
done
for size in 65536 1048576; do
  ours=$(p2p_run verbs bw "$size")
  tcp=$(p2p_run tcp bw "$size")
  theirs=$(perftest ib_send_bw "$size" | awk '{ print $4 }')    # BW average[MB/sec]
  echo "| bandwidth (MB/s) | $size | $ours | $tcp | ${theirs:-n/a} | $(ratio "$ours" "$theirs") | $(ratio "$ours" "$tcp") |"
done
for tool in ib_send_lat ib_send_bw; do
  if [ -s "$log/$tool.refused" ]; then
    echo
    echo "$tool under macOS's rules: $(paste -sd ';' "$log/$tool.refused")"
    echo "  (its figures above ran with SOFTRDMA_ALLOW=recv-before-rts,local-write-mr)"
  fi
  if [ -s "$log/$tool.why" ]; then echo; echo "$tool did not run on $device: $(head -n 1 "$log/$tool.why")"; fi
done
exit 0
