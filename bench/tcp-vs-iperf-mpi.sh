#!/usr/bin/env bash
# meshinfer's TCP transport against the references on this machine's loopback,
# side by side in one run: point-to-point bandwidth against iperf3 (target: at
# least 70% of it), 4-rank all-reduce latency at 16 KiB and bandwidth at 64 MiB
# against Open MPI's MPI_Allreduce over TCP (target: no slower).
# This machine is noisy, so each pair runs ROUNDS times (default 5), the two
# sides alternating which goes first, and the table gives medians, the spread
# (min-max) of each side and of the per-round ratio.
# Installs iperf3 and Open MPI when missing; needs build/bench/tcp_transport_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps iperf3 openmpi-bin libopenmpi-dev
bench=build/bench/tcp_transport_bench
[ -x "$bench" ] || { echo "build first: make bench" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Runs one tcp_transport_bench per rank on loopback; prints rank 0's number.
meshinfer_ranks() {
  local n=$1; shift
  local port; port=$(free_port)
  python3 - "$n" "$port" > "$work/cluster.json" <<'PY'
import json, sys
n, port = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"transport": "tcp", "port": port, "hosts": [{"ssh": "localhost", "ips": ["127.0.0.1"]}] * n}))
PY
  local r others=()
  for ((r = 1; r < n; r++)); do "$bench" "$work/cluster.json" "$r" "$@" & others+=($!); pids+=($!); done
  timeout 300 "$bench" "$work/cluster.json" 0 "$@"
  wait "${others[@]}"
}

cat > "$work/allreduce.cpp" <<'CPP'
// MPI_Allreduce of BYTES of floats, ITERS times after a warm-up; rank 0 prints the mean seconds.
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long bytes = std::atol(argv[1]);
  const int iters = std::atoi(argv[2]);
  std::vector<float> in(bytes / sizeof(float), 1.0f), out(in.size());
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(in.data(), out.data(), (int)in.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(in.data(), out.data(), (int)in.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const double mean = (MPI_Wtime() - start) / iters;
  if (rank == 0) std::printf("%.9g\n", mean);
  MPI_Finalize();
}
CPP
mpicxx -O2 -o "$work/allreduce" "$work/allreduce.cpp"
mpi() {
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl tcp,self --mca btl_tcp_if_include lo \
    --mca pml ob1 "$work/allreduce" "$@" 2>/dev/null | tail -1
}

# Point to point: 256 x 4 MiB; iperf3 one stream for 3 s.
mesh_p2p() { meshinfer_ranks 2 p2p $((4 << 20)) 256; }
iperf_p2p() {
  local iport; iport=$(free_port)
  iperf3 -s -p "$iport" -1 >/dev/null 2>&1 & pids+=($!)
  sleep 0.5
  iperf3 -c 127.0.0.1 -p "$iport" -t 3 -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8)'
}
mesh_small() { meshinfer_ranks 4 allreduce 16384 2000; }
mpi_small() { mpi 16384 2000; }
mesh_large() { meshinfer_ranks 4 allreduce $((64 << 20)) 5; }
mpi_large() { mpi $((64 << 20)) 5; }

# One line per round: p2p mesh, iperf, small mesh, mpi, large mesh, mpi.
rounds=${ROUNDS:-5}
for ((i = 0; i < rounds; i++)); do
  row=()
  for pair in "mesh_p2p iperf_p2p" "mesh_small mpi_small" "mesh_large mpi_large"; do
    read -r ours theirs <<<"$pair"
    if ((i % 2 == 0)); then a=$($ours); b=$($theirs); else b=$($theirs); a=$($ours); fi
    row+=("$a" "$b")
  done
  echo "${row[*]}" >>"$work/rounds.txt"
done

python3 - "$work/rounds.txt" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
col = lambda k: [r[k] for r in rows]
big = 64 * 2**20
def cell(xs, scale, fmt):
    return f"{fmt.format(statistics.median(xs) * scale)} ({fmt.format(min(xs) * scale)}-{fmt.format(max(xs) * scale)})"
def ratio(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"
print(f"{len(rows)} rounds, sides alternating; median (min-max)")
print("| measure (loopback, this machine) | meshinfer | reference | meshinfer / reference | target |")
print("|---|---|---|---|---|")
mp, ip = col(0), col(1)
print(f"| point-to-point bandwidth, GB/s (vs iperf3) | {cell(mp, 1e-9, '{:.2f}')} | {cell(ip, 1e-9, '{:.2f}')} | "
      f"{ratio([a / b for a, b in zip(mp, ip)])} | >= 0.70 |")
ms, ps = col(2), col(3)
print(f"| 4-rank all-reduce 16 KiB, us (vs MPI_Allreduce) | {cell(ms, 1e6, '{:.1f}')} | {cell(ps, 1e6, '{:.1f}')} | "
      f"{ratio([b / a for a, b in zip(ms, ps)])} (speed) | >= 1.00 |")
ml, pl = [big / x for x in col(4)], [big / x for x in col(5)]
print(f"| 4-rank all-reduce 64 MiB, GB/s of buffer (vs MPI_Allreduce) | {cell(ml, 1e-9, '{:.2f}')} | "
      f"{cell(pl, 1e-9, '{:.2f}')} | {ratio([a / b for a, b in zip(ml, pl)])} | >= 1.00 |")
PY
