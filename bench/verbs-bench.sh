#!/usr/bin/env bash
# Point-to-point latency and bandwidth of VerbsRuntime next to rdma-core's
# perftest (ib_send_lat, ib_send_bw) on the same device and next to the TCP
# transport on the same loopback, in one run, two processes on this machine,
# as ratios of medians over ROUNDS rounds that alternate the three, so each
# sees the same disturbance. By default on softrdma (preloaded, device
# rdma_lo), the device CI has; name a DEVICE (and SOFTRDMA=0) to measure a
# real NIC or Soft-RoCE.
# Usage: bench/verbs-bench.sh [DEVICE]   (QP=uc|rc, ITERS=N, BYTES=N, ROUNDS=N, SOFTRDMA=0|1)
# ITERS: round trips per latency run; BYTES: streamed per bandwidth run (perftest
# runs at most its device's max_qp_wr iterations: it sizes its queues by them).
set -euo pipefail
cd "$(dirname "$0")/.."
p2p=build/bench/verbs_p2p
qp=${QP:-uc}
iters=${ITERS:-5000}
bytes=${BYTES:-268435456}
rounds=${ROUNDS:-5}
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
gid_index=$(ibv_devinfo -v -d "$device" | sed -n 's/.*GID\[ *\([0-9]*\)\]:.*ffff:.*/\1/p' | head -n 1)
# The device's largest SEND (its port's max_msg_sz: 4 KiB on macOS 26.2 and on
# softrdma by default): a bigger one is dropped, yet a UC sender still counts it
# as sent. VerbsRuntime's frames are this size (at most 512 KiB); perftest's
# SENDs never exceed it, so for a larger message it streams frame-sized SENDs,
# the wire pattern VerbsRuntime makes of that message.
max_msg=$(ibv_devinfo -v -d "$device" | awk '/max_msg_sz/ { print $2; exit }')
frame=$(( ${max_msg:-4096} < 524288 ? ${max_msg:-4096} : 524288 ))
max_wr=$(ibv_devinfo -v -d "$device" | awk '/max_qp_wr/ { print $2; exit }')
perftest_args=(-d "$device" -c "${qp^^}" -F)
[ -z "$gid_index" ] || perftest_args+=(-x "$gid_index")
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A perftest server and client on the device: the client's output in $log/TOOL.client.
perftest_pair() {
  local tool=$1 size=$2 n=$3 port
  shift 3
  port=$(free_port)
  timeout 60 env "$@" "$tool" "${perftest_args[@]}" -n "$n" -p "$port" -s "$size" >"$log/$tool.server" 2>&1 &
  local server=$!
  sleep 0.5
  timeout 60 env "$@" "$tool" "${perftest_args[@]}" -n "$n" -p "$port" -s "$size" 127.0.0.1 >"$log/$tool.client" 2>&1 || true
  wait "$server" || true
}

# perftest's result row for SIZE, as END printed it (client, server, or
# "both": the client's row, then the server's), or nothing (with why in $log/TOOL.why). On softrdma it first runs under macOS's
# rules, to record what they refuse, then with the allowances that lift them.
perftest() {
  local tool=$1 size=$2 end=$3 n=$iters allow=()
  [ "$tool" != ib_send_bw ] || n=$(( bytes / size ))
  n=$(( n < ${max_wr:-4096} ? n : ${max_wr:-4096} ))
  if [ "$softrdma" = 1 ]; then
    if [ ! -e "$log/$tool.refused" ]; then
      perftest_pair "$tool" "$size" "$n" SOFTRDMA_ALLOW=
      grep -h -o "softrdma: .* refused: [^(]*" "$log/$tool.server" "$log/$tool.client" | sort -u >"$log/$tool.refused" || true
    fi
    if [ -s "$log/$tool.refused" ]; then allow=(SOFTRDMA_ALLOW=recv-before-rts,local-write-mr); fi
  fi
  perftest_pair "$tool" "$size" "$n" "${allow[@]}"
  local ends=("$log/$tool.$end")
  [ "$end" != both ] || ends=("$log/$tool.client" "$log/$tool.server")
  awk -v s="$size" '$1 == s { print; found++; nextfile } END { exit !found }' "${ends[@]}" ||
    grep -h -m 1 -i -E "refused|fail|error|couldn't|unable" "$log/$tool.client" "$log/$tool.server" >"$log/$tool.why" || true
}

# One VerbsRuntime or TcpRuntime measurement between two processes.
p2p_run() {
  local transport=$1 mode=$2 size=$3 port n=$iters
  port=$(free_port)
  [ "$mode" != bw ] || n=$(( bytes / size > 0 ? bytes / size : 1 ))
  local args=(--port "$port" --transport "$transport" --device "$device" --mode "$mode" --qp "$qp" --size "$size"
              --iters "$n" --frame "$frame")
  "$p2p" --rank 1 "${args[@]}" &
  local peer=$!
  "$p2p" --rank 0 "${args[@]}" | awk '{ print $2 }'
  wait "$peer"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "device $device$([ "$softrdma" = 1 ] && echo " (softrdma)"), $qp queue pairs, $iters round trips a latency run, $bytes B a bandwidth run (perftest: at most $max_wr iterations), frames of $frame B, medians of $rounds alternating rounds"
echo
echo "| test | size (B) | VerbsRuntime | TCP transport | perftest | Verbs/perftest | Verbs/TCP |"
echo "|---|---|---|---|---|---|---|"
for size in 8 4096; do
  ours=() tcp=() theirs=()
  for ((r = 0; r < rounds; r++)); do
    ours+=("$(p2p_run verbs lat "$size")")
    tcp+=("$(p2p_run tcp lat "$size")")
    theirs+=("$(perftest ib_send_lat "$size" client | awk '{ print $6 }')")   # t_avg[usec]
  done
  o=$(echo "${ours[*]}" | median) t=$(echo "${tcp[*]}" | median) p=$(echo "${theirs[*]}" | median)
  echo "| latency one-way (us) | $size | $o | $t | ${p:-n/a} | $(ratio "$o" "$p") | $(ratio "$o" "$t") |"
done
for size in 4096 65536 1048576; do
  sends=$(( size < frame ? size : frame ))
  ours=() tcp=() theirs=()
  for ((r = 0; r < rounds; r++)); do
    ours+=("$(p2p_run verbs bw "$size")")
    tcp+=("$(p2p_run tcp bw "$size")")
    # BW average[MB/sec]: the lower of the two ends. A UC sender counts what it posted, delivered or
    # not; a receiver on softrdma may reap a burst of completions at once and time it near zero.
    theirs+=("$(perftest ib_send_bw "$sends" both | awk 'NR == 1 || $4 < min { min = $4 } END { print min }')")
  done
  o=$(echo "${ours[*]}" | median) t=$(echo "${tcp[*]}" | median) p=$(echo "${theirs[*]}" | median)
  [ "$sends" = "$size" ] || [ -z "$p" ] || label=" ($sends B SENDs)"
  echo "| bandwidth (MB/s) | $size | $o | $t | ${p:-n/a}${label:-} | $(ratio "$o" "$p") | $(ratio "$o" "$t") |"
  label=
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
