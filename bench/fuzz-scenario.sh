#!/usr/bin/env bash
# Fuzzes the scenario parser (tests/fuzz/scenario_fuzz.cpp) with libFuzzer:
#   bench/fuzz-scenario.sh [SECONDS]      (default 60)
# Builds it with clang++ and ASan/UBSan into $FUZZ_DIR (default build/fuzz-scenario),
# seeds the corpus from the shipped scenarios and tests/fuzz/seeds, runs, and prints
# the executions and crashes. Crashing inputs are kept in $FUZZ_DIR/crashes; exit
# status 1 if any.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
out="${FUZZ_DIR:-$root/build/fuzz-scenario}"
flags=("-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=undefined)

if ! command -v clang++ >/dev/null; then
  echo "fuzz-scenario: clang++ not found; skipping"
  exit 0
fi
# Apple's clang++ ships without libFuzzer.
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ "${flags[@]}" - -o /dev/null 2>/dev/null; then
  echo "fuzz-scenario: clang++ has no libFuzzer; skipping"
  exit 0
fi

mkdir -p "$out/corpus" "$out/crashes"
bin="$out/scenario_fuzz"
# The sanitized build takes a minute: redo it only when a source changed.
if [[ ! -x $bin || -n $(find "$root/engine" "$root/tests/fuzz" -name '*.[ch]pp' -newer "$bin" | head -1) ]]; then
  echo "fuzz-scenario: building $bin"
  clang++ -std=c++20 -g -O1 "${flags[@]}" -I"$root" -DMESHINFER_SOURCE_DIR="\"$root\"" \
    "$root/engine/error.cpp" "$root/engine/json_input.cpp" "$root/engine/catalog.cpp" \
    "$root/engine/scenario.cpp" "$root/engine/scenario_cluster.cpp" \
    "$root/engine/compute/model_config.cpp" "$root/engine/compute/safetensors.cpp" \
    "$root/tests/fuzz/scenario_fuzz.cpp" -lfmt -o "$bin"
fi

shopt -s nullglob
for seed in "$root"/scenarios/*.json "$root"/scenarios/ci/*.json "$root"/tests/fuzz/seeds/*.json; do
  cp "$seed" "$out/corpus/"
done

stamp="$out/.run-started"
touch "$stamp"
log="$out/fuzz.log"
status=0
"$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
  -dict="$root/tests/fuzz/scenario.dict" -artifact_prefix="$out/crashes/" "$out/corpus" >"$log" 2>&1 || status=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
crashes=$(find "$out/crashes" -type f -newer "$stamp" | wc -l)
echo "fuzz-scenario: ${seconds} s, ${execs:-?} executions, ${crashes} crash(es); log: $log"
if ((status != 0 || crashes > 0)); then
  grep -m1 -A20 -E '^==[0-9]+==|runtime error|uncaught exception|deadly signal' "$log" || tail -20 "$log"
  find "$out/crashes" -type f -newer "$stamp"
  exit 1
fi
