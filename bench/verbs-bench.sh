#!/usr/bin/env bash
# Point-to-point latency and bandwidth of VerbsRuntime next to rdma-core's
# perftest (ib_send_lat, ib_send_bw) on the same device and next to the TCP
# transport between the same addresses, in one run, two processes on this
# machine, as ratios of medians over ROUNDS rounds that alternate the three, so
# each sees the same disturbance; then a 4-rank all-reduce over each transport.
# By default on softrdma (preloaded, device rdma_lo), the device CI has; name a
# DEVICE (and SOFTRDMA=0) to measure a real NIC or Soft-RoCE. NETNS=1 (root,
# softrdma): the two ends in two network namespaces joined by one veth pair,
# as `launch --netns --netns-rdma` cables two nodes, unshaped (the cable's
# ceiling, not its card's rate); the all-reduce then stays on loopback.
# Usage: bench/verbs-bench.sh [DEVICE]   (QP=uc|rc, ITERS=N, BYTES=N, ROUNDS=N, SOFTRDMA=0|1, NETNS=0|1)
# ITERS: round trips per latency run; BYTES: streamed per bandwidth run (perftest
# runs at most its device's max_qp_wr iterations: it sizes its queues by them).
set -euo pipefail
cd "$(dirname "$0")/.."
rank_bin=build/bench/verbs_rank
qp=${QP:-uc}
iters=${ITERS:-5000}
bytes=${BYTES:-268435456}
rounds=${ROUNDS:-5}
softrdma=${SOFTRDMA:-1}
netns=${NETNS:-0}

if build/cli/meshinfer --version 2>/dev/null | grep -q "verbs transport not built"; then
  echo "verbs-bench: the verbs transport is not built here (no rdma-core headers): nothing to measure."
  exit 0
fi
[ -x "$rank_bin" ] || { echo "verbs-bench: $rank_bin missing: build first (make bench)" >&2; exit 1; }
command -v ib_send_bw >/dev/null && command -v ibv_devinfo >/dev/null || scripts/install-deps perftest ibverbs-utils
if [ "$softrdma" = 1 ]; then
  lib=$PWD/build/hw/softrdma/libsoftrdma.so
  [ -f "$lib" ] || { echo "verbs-bench: $lib missing: build first" >&2; exit 1; }
  export LD_PRELOAD=$lib
fi
log=$(mktemp -d)
cleanup() {
  rm -rf "$log"
  [ "$netns" != 1 ] || ip netns del "${ns[0]}" 2>/dev/null || true
  [ "$netns" != 1 ] || ip netns del "${ns[1]}" 2>/dev/null || true
}
trap cleanup EXIT

# The two ends: their namespaces (none on loopback), addresses and devices.
ns=("" "") addr=(127.0.0.1 127.0.0.1)
if [ "$netns" = 1 ]; then
  [ "$softrdma" = 1 ] && [ "$(id -u)" = 0 ] || { echo "verbs-bench: NETNS=1 needs root and softrdma" >&2; exit 1; }
  ns=("mibench$$a" "mibench$$b") addr=(10.97.0.1 10.97.0.2)
  for n in "${ns[@]}"; do ip netns add "$n" && ip -n "$n" link set lo up; done
  ip -n "${ns[0]}" link add name v1 type veth peer name v0 netns "${ns[1]}"
  for r in 0 1; do
    dev=v$((1 - r))
    ip -n "${ns[r]}" addr add "${addr[r]}/24" dev "$dev"
    # One CPU's backlog per flow, so the veth keeps packets in order as a cable does (hw/netns_mesh.cpp).
    ip netns exec "${ns[r]}" sh -c "echo $(printf '%x' $(( (1 << $(nproc)) - 1 ))) > /sys/class/net/$dev/queues/rx-0/rps_cpus"
    ip -n "${ns[r]}" link set "$dev" up
  done
  for r in 0 1; do
    for _ in $(seq 250); do ip -n "${ns[r]}" -o link show type veth | grep -qv 'state UP' || break; sleep 0.02; done
  done
fi
# Runs a command at end R: in its namespace, if any.
at() {
  local r=$1
  shift
  if [ -n "${ns[r]}" ]; then ip netns exec "${ns[r]}" "$@"; else "$@"; fi
}
if [ "$netns" = 1 ]; then
  devices=(rdma_v1 rdma_v0)
else
  devices=("${1:-$([ "$softrdma" = 1 ] && echo rdma_lo || "$rank_bin" --list | head -n 1)}")
  devices+=("${devices[0]}")
fi
device=${devices[0]}
if [ -z "$device" ]; then
  echo "verbs-bench: no RDMA device (ibv_get_device_list returned none): nothing to measure."
  echo "  Linux: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE, or a real RDMA NIC."
  exit 0
fi

# perftest needs the IPv4-mapped GID's index on RoCE and Thunderbolt.
gid_index=$(at 0 ibv_devinfo -v -d "$device" | sed -n 's/.*GID\[ *\([0-9]*\)\]:.*ffff:.*/\1/p' | head -n 1)
# The device's largest SEND (its port's max_msg_sz: 4 KiB on macOS 26.2 and on
# softrdma by default): a bigger one is dropped, yet a UC sender still counts it
# as sent. VerbsRuntime's frames are this size (at most 512 KiB); perftest's
# SENDs never exceed it, so for a larger message it streams frame-sized SENDs,
# the wire pattern VerbsRuntime makes of that message.
max_msg=$(at 0 ibv_devinfo -v -d "$device" | awk '/max_msg_sz/ { print $2; exit }')
frame=$(( ${max_msg:-4096} < 524288 ? ${max_msg:-4096} : 524288 ))
max_wr=$(at 0 ibv_devinfo -v -d "$device" | awk '/max_qp_wr/ { print $2; exit }')
perftest_args=(-c "${qp^^}" -F)
[ -z "$gid_index" ] || perftest_args+=(-x "$gid_index")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A perftest server and client on the device: the client's output in $log/TOOL.client.
perftest_pair() {
  local tool=$1 size=$2 n=$3 port
  shift 3
  port=$(free_port)
  at 0 timeout 60 env "$@" "$tool" -d "${devices[0]}" "${perftest_args[@]}" -n "$n" -p "$port" -s "$size" \
    >"$log/$tool.server" 2>&1 &
  local server=$!
  sleep 0.5
  at 1 timeout 60 env "$@" "$tool" -d "${devices[1]}" "${perftest_args[@]}" -n "$n" -p "$port" -s "$size" "${addr[0]}" \
    >"$log/$tool.client" 2>&1 || true
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
  local args=(--host "${addr[0]}" --port "$port" --transport "$transport" --mode "$mode" --qp "$qp" --size "$size"
              --iters "$n" --frame "$frame")
  at 1 "$rank_bin" --rank 1 --listen "${addr[1]}" --device "${devices[1]}" "${args[@]}" &
  local peer=$!
  at 0 "$rank_bin" --rank 0 --listen "${addr[0]}" --device "${devices[0]}" "${args[@]}" | awk '{ print $2 }'
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
# A 4-rank all-reduce, with the algorithm the engine picks for a full mesh of
# tb5-rdma cables, over each transport on this machine (loopback).
lo_device=$([ "$netns" = 1 ] && echo rdma_lo || echo "$device")
allreduce_run() {
  local transport=$1 size=$2 n=$3 port r
  port=$(free_port)
  local args=(--world 4 --port "$port" --transport "$transport" --device "$lo_device" --mode allreduce --qp "$qp"
              --size "$size" --iters "$n" --frame "$frame")
  for r in 1 2 3; do "$rank_bin" --rank "$r" "${args[@]}" & done
  "$rank_bin" --rank 0 "${args[@]}" | awk '{ print $2; print $3 >"/dev/stderr" }' 2>"$log/algorithm"
  wait
}
echo
echo "| 4-rank all-reduce | size (B) | algorithm | VerbsRuntime (us) | TCP transport (us) | Verbs/TCP |"
echo "|---|---|---|---|---|---|"
for size in 16384 67108864; do
  n=$(( size <= 65536 ? 1000 : 5 ))
  ours=() tcp=()
  for ((r = 0; r < rounds; r++)); do
    ours+=("$(allreduce_run verbs "$size" "$n")")
    tcp+=("$(allreduce_run tcp "$size" "$n")")
  done
  o=$(echo "${ours[*]}" | median) t=$(echo "${tcp[*]}" | median)
  echo "| all-reduce | $size | $(cat "$log/algorithm") | $o | $t | $(ratio "$o" "$t") |"
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
