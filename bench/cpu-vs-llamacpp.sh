#!/usr/bin/env bash
# meshinfer's CpuBackend against llama.cpp's CPU build on the same weights and
# the same cores: decode and prefill tok/s (a 256-token prompt), medians of
# alternating runs, and start-up plus load of the model, for f32 against F32,
# MLX 8-bit against Q8_0 and MLX 4-bit against Q4_0, with the machine's memory
# bandwidth (a STREAM-like copy) beside each decode figure as its physical limit.
#
# llama.cpp is npm's prebuilt @node-llama-cpp/linux-x64 (libllama and the ggml
# CPU backends), its llama.h taken from the llama.cpp source bundled in the
# node-llama-cpp package; both are installed under the work directory at run
# time, and bench/llamacpp_driver.c is compiled against them. The model is
# make-model's random Llama, converted to GGUF by bench/gguf_from_model (Q8_0 and
# Q4_0 quantized from the same f32 weights MLX's 8 and 4 bits are); the f32 pair
# must produce the same greedy tokens, which the script checks.
#
# Usage: bench/cpu-vs-llamacpp.sh [--runs N] [--threads T] [--gen N] [--hidden H] [--layers L] [--formats "f32 8bit 4bit"]
# Environment: BUILD (default build), WORK (default $BUILD/bench-llamacpp).
# Not part of make test: it downloads from npm and takes minutes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
work=${WORK:-$build/bench-llamacpp}
runs=5 threads=$(nproc) gen=64 prompt=256 hidden=1024 layers=8 formats="f32 8bit 4bit"
version=3.22.1  # node-llama-cpp and its prebuilt binaries, released together
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --hidden) hidden=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --formats) formats=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--threads T] [--gen N] [--hidden H] [--layers L] [--formats LIST]" >&2; exit 2 ;;
  esac
done
mkdir -p "$work"
log() { echo "cpu-vs-llamacpp: $*" >&2; }

# Builds share a lock with whoever else builds in this tree; held to the end, so that no build
# disturbs the timings (run the script as it is: under an outer flock it would wait for itself).
exec 9>/tmp/meshinfer-build.lock
flock 9
cmake --build "$build" -j 2 --target meshinfer gguf_from_model >&2
meshinfer=$build/cli/meshinfer convert=$build/bench/gguf_from_model

# llama.cpp from npm: the binaries, and the header from the source bundle.
npm_dir=$work/npm-$version
bins=$npm_dir/x64/package/bins/linux-x64
if [ ! -f "$bins/libllama.v0.5.0.so" ] || [ ! -f "$npm_dir/include/llama.h" ]; then
  log "installing @node-llama-cpp/linux-x64@$version and node-llama-cpp@$version from npm"
  rm -rf "$npm_dir" && mkdir -p "$npm_dir"/{x64,nlc,include}
  (cd "$npm_dir" && timeout 600 npm pack --silent "@node-llama-cpp/linux-x64@$version" "node-llama-cpp@$version" >/dev/null)
  tar xzf "$npm_dir"/node-llama-cpp-linux-x64-$version.tgz -C "$npm_dir/x64"
  tar xzf "$npm_dir"/node-llama-cpp-$version.tgz -C "$npm_dir/nlc"
  git clone -q --no-checkout "$npm_dir/nlc/package/llama/gitRelease.bundle" "$npm_dir/src"
  git -C "$npm_dir/src" archive HEAD include/llama.h ggml/include | tar x -C "$npm_dir"
  cp "$npm_dir"/ggml/include/*.h "$npm_dir/include/"
fi
libllama=$(cd "$bins" && ls libllama.v*.so) libggml=$(cd "$bins" && ls libggml.v*.so)
cflags=(-O2 -Wall -std=c11 -D_POSIX_C_SOURCE=199309L)
gcc "${cflags[@]}" -I"$npm_dir/include" "$root/bench/llamacpp_driver.c" -o "$work/llamacpp_driver" \
  -L"$bins" -l:"$libllama" -l:"$libggml" -l:libggml-base.so -Wl,-rpath,"$bins"
gcc "${cflags[@]}" "$root/bench/stream_copy.c" -o "$work/stream_copy" -lpthread

# The models: one f32 Llama, and MLX's 8- and 4-bit quantizations of the same weights.
shape=(--type llama --hidden "$hidden" --layers "$layers" --experts 0 --seed 1)
declare -A mlx_quant=([f32]="" [8bit]=mlx-8bit [4bit]=mlx-4bit) gguf_type=([f32]=f32 [8bit]=q8_0 [4bit]=q4_0)
f32_dir=$work/model-f32-$hidden-$layers  # what every GGUF is converted from
[ -f "$f32_dir/config.json" ] || "$meshinfer" make-model --out "$f32_dir" "${shape[@]}" >&2
for f in $formats; do
  dir=$work/model-$f-$hidden-$layers
  [ -f "$dir/config.json" ] || "$meshinfer" make-model --out "$dir" "${shape[@]}" --quant "${mlx_quant[$f]}" >&2
  [ -f "$dir.gguf" ] || "$convert" "$f32_dir" "$dir.gguf" "${gguf_type[$f]}"
  for kind in bench startup; do  # startup: one prompt token, one output token
    p=$prompt g=$gen
    [ $kind = startup ] && p=1 g=1
    cat >"$work/$kind-$f.json" <<EOF
{"name": "cpu-vs-llamacpp-$kind-$f", "seed": 1,
 "cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb", "threads": $threads}], "fabric": {"type": "full-mesh", "link": "tb5-tcp"}},
 "model": {"path": "model-$f-$hidden-$layers"}, "parallelism": "tensor",
 "workload": {"requests": 1, "prompt_tokens": $p, "output_tokens": $g, "prefill_chunk": 512, "arrival": {"type": "closed", "concurrency": 1}}}
EOF
  done
done
vocab=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$f32_dir/config.json")
read -r -a ids <<<"$("$convert" --prompt "$prompt" "$vocab" 1)"

# Every model file out of the page cache, so that each engine reads its own as after a reboot: how a file's
# pages were first read (in 4 KB or 2 MB pieces) decides how they lie in memory, which moved meshinfer's decode
# by a quarter on the same weights (llama.cpp copies its quantized weights at load; its f32 ones it maps too).
python3 - "$work"/model-*-"$hidden-$layers"/model*.safetensors "$work"/model-*-"$hidden-$layers".gguf <<'EOF'
import os, sys
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
EOF

results=$work/results.txt
: >"$results"
now() { date +%s.%N; }
minus() { awk "BEGIN { print $1 - $2 }"; }
for f in $formats; do
  for run in $(seq "$runs"); do
    log "$f, round $run of $runs"
    # Alternating, so both engines meet the same disturbances.
    out=$work/out-$f
    "$meshinfer" launch --local 1 "$work/bench-$f.json" --out "$out" >/dev/null 2>&1
    python3 - "$out/report.json" "$f" >>"$results" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); s = r["summary"]
print("meshinfer", sys.argv[2], "decode", s["decode_tokens_per_s"])
print("meshinfer", sys.argv[2], "prefill", s["prefill_tokens_per_s"])
print("meshinfer", sys.argv[2], "ids", ",".join(map(str, r["requests"][0]["output_ids"])))
EOF
    { read -r _ pre dec; read -r gen_ids; } < <("$work/llamacpp_driver" "$bins" "$work/model-$f-$hidden-$layers.gguf" "$threads" "$gen" "${ids[@]}")
    printf 'llama.cpp %s decode %s\nllama.cpp %s prefill %s\nllama.cpp %s ids %s\n' "$f" "$dec" "$f" "$pre" "$f" \
      "$(echo $gen_ids | tr ' ' ',')" >>"$results"
    t0=$(now); "$meshinfer" launch --local 1 "$work/startup-$f.json" --out "$out-startup" >/dev/null 2>&1; t1=$(now)
    "$work/llamacpp_driver" "$bins" "$work/model-$f-$hidden-$layers.gguf" "$threads" 1 0 >/dev/null; t2=$(now)
    echo "meshinfer $f startup $(minus "$t1" "$t0")" >>"$results"
    echo "llama.cpp $f startup $(minus "$t2" "$t1")" >>"$results"
    echo "machine $f bandwidth $("$work/stream_copy" "$threads")" >>"$results"
  done
done

python3 - "$results" "$threads" "$hidden" "$layers" "$runs" "$prompt" "$gen" <<'EOF'
import statistics, sys
from collections import defaultdict
path, threads, hidden, layers, runs, prompt, gen = sys.argv[1:]
vals, ids = defaultdict(list), defaultdict(set)
for line in open(path):
    who, f, what, v = line.split()
    if what == "ids": ids[(who, f)].add(v)
    else: vals[(who, f, what)].append(float(v))
m = lambda *k: statistics.median(vals[k]) if vals[k] else float("nan")
pair = {"f32": "F32", "8bit": "Q8_0", "4bit": "Q4_0"}
print(f"CpuBackend vs llama.cpp CPU, random Llama (hidden {hidden}, {layers} layers), {threads} thread(s), "
      f"prompt {prompt}, {gen} tokens decoded; medians of {runs} alternating runs\n")
print("| meshinfer vs llama.cpp | decode tok/s | vs llama.cpp | copy GB/s | prefill tok/s | vs llama.cpp "
      "| start-up+load s | vs llama.cpp | same tokens |")
print("|---|---|---|---|---|---|---|---|---|")
for f in pair:
    if not vals[("meshinfer", f, "decode")]: continue
    d, dl = m("meshinfer", f, "decode"), m("llama.cpp", f, "decode")
    p, pl = m("meshinfer", f, "prefill"), m("llama.cpp", f, "prefill")
    s, sl = m("meshinfer", f, "startup"), m("llama.cpp", f, "startup")
    same = ids[("meshinfer", f)] == ids[("llama.cpp", f)] and len(ids[("meshinfer", f)]) == 1
    print(f"| {f} vs {pair[f]} | {d:.1f} vs {dl:.1f} | {d / dl:.2f}x | {m('machine', f, 'bandwidth'):.1f} "
          f"| {p:.0f} vs {pl:.0f} | {p / pl:.2f}x | {s:.2f} vs {sl:.2f} | {s / sl:.2f}x "
          f"| {'yes' if same else 'no (other rounding)' if f != 'f32' else 'NO'} |")
EOF
