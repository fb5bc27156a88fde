#!/usr/bin/env bash
# Fuzzes one decoder family with libFuzzer and prints executions and crashes:
#   bench/fuzz.sh scenario [SECONDS]   the scenario parser (tests/fuzz/scenario_fuzz.cpp)
#   bench/fuzz.sh wire [SECONDS]       frames, handshakes, control messages, node reports, heartbeats (tests/fuzz/wire_fuzz.cpp)
# SECONDS defaults to 60. Builds the target with clang++ and ASan/UBSan into
# $FUZZ_DIR (default build/fuzz-TARGET), seeds the corpus, runs, and prints the
# executions and crashes. Crashing inputs are kept in $FUZZ_DIR/crashes; exit
# status 1 if any.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:?usage: bench/fuzz.sh scenario|wire [SECONDS]}"
seconds="${2:-60}"
out="${FUZZ_DIR:-$root/build/fuzz-$target}"
flags=("-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=undefined)
run_flags=()
link_flags=()
case "$target" in
  scenario)
    # The whole engine: a scenario reaches its catalog, model configs and checkpoints' headers.
    mapfile -t sources < <(cd "$root" && find engine -name '*.cpp' | sort)
    link_flags=($(pkg-config --cflags --libs openblas) -pthread)
    seeds=("$root"/scenarios/*.json "$root"/scenarios/ci/*.json "$root"/tests/fuzz/seeds/*.json)
    run_flags=(-dict="$root/tests/fuzz/scenario.dict") ;;
  wire)
    sources=(engine/base/error.cpp engine/node/liveness.cpp engine/node/epoch_runtime.cpp hw/handshake.cpp hw/tcp_frame.cpp
             hw/message_stream.cpp hw/verbs/verbs_frames.cpp hw/node_result_codec.cpp)
    seeds=("$root"/tests/fuzz/wire-seeds/*)
    run_flags=(-rss_limit_mb=1024 -malloc_limit_mb=1100) ;;  # a length trusted from the wire would pass 1 GiB
  *) echo "fuzz: unknown target $target (scenario or wire)" >&2; exit 2 ;;
esac

if ! command -v clang++ >/dev/null; then
  echo "fuzz-$target: clang++ not found; skipping"
  exit 0
fi
# Apple's clang++ ships without libFuzzer.
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ "${flags[@]}" - -o /dev/null 2>/dev/null; then
  echo "fuzz-$target: clang++ has no libFuzzer; skipping"
  exit 0
fi

mkdir -p "$out/corpus" "$out/crashes"
bin="$out/${target}_fuzz"
# The sanitized build takes a minute: redo it only when a source changed.
if [[ ! -x $bin || -n $(find "$root/engine" "$root/hw" "$root/tests/fuzz" -name '*.[ch]pp' -newer "$bin" | head -1) ]]; then
  echo "fuzz-$target: building $bin"
  # The build info CMake generates, with this tree as the source dir (where the catalog is).
  sed -e "s|@PROJECT_VERSION@|fuzz|" -e "s|@MESHINFER_GIT@|fuzz|" -e "s|@CMAKE_SOURCE_DIR@|$root|" \
    "$root/engine/base/build_info.cpp.in" >"$out/build_info.cpp"
  clang++ -std=c++20 -g -O1 "${flags[@]}" -I"$root" "${sources[@]/#/$root/}" "$out/build_info.cpp" \
    "$root/tests/fuzz/${target}_fuzz.cpp" -lfmt "${link_flags[@]}" -o "$bin"
fi

shopt -s nullglob
for seed in "${seeds[@]}"; do cp "$seed" "$out/corpus/"; done

stamp="$out/.run-started"
touch "$stamp"
log="$out/fuzz.log"
status=0
"$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${run_flags[@]}" \
  -artifact_prefix="$out/crashes/" "$out/corpus" >"$log" 2>&1 || status=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
crashes=$(find "$out/crashes" -type f -newer "$stamp" | wc -l)
echo "fuzz-$target: ${seconds} s, ${execs:-?} executions, ${crashes} crash(es); log: $log"
if ((status != 0 || crashes > 0)); then
  grep -m1 -A20 -E '^==[0-9]+==|runtime error|uncaught exception|deadly signal' "$log" || tail -20 "$log"
  find "$out/crashes" -type f -newer "$stamp"
  exit 1
fi
