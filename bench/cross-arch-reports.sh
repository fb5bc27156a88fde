#!/usr/bin/env bash
# Does a simulated report have the same bytes on arm64 as on x86-64?
#   bench/cross-arch-reports.sh [SCENARIO...]      (default: every shipped scenario)
# Cross-builds `meshinfer-sim` for aarch64 in $ARM_DIR (default build-arm64) with Debian's
# cross compiler and arm64 libraries (scripts/install-deps --cross-arm64), runs each
# scenario with it under qemu-user and with the native build ($BUILD_DIR, default build),
# and diffs what each wrote: report.json, report.md, trace.json, report.html and the
# console output. Prints one row per scenario; exit 0 when every byte is the same.
# Both binaries come from the same tree, configured together, so the git id needs no masking.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
arm="${ARM_DIR:-$root/build-arm64}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
triplet=aarch64-linux-gnu

"$root/scripts/install-deps" --cross-arm64
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

# Debian ships the arm64 SimGrid runtime but not beside the amd64 -dev package (not
# Multi-Arch: same): the headers are the amd64 package's, the library the arm64 one,
# reached through a simgrid.pc and libsimgrid.so link of our own.
mkdir -p "$arm/simgrid-arm64"
ln -sf "/usr/lib/$triplet/libsimgrid.so.3.32" "$arm/simgrid-arm64/libsimgrid.so"
cat >"$arm/simgrid-arm64/simgrid.pc" <<EOF
Name: SimGrid
Description: Debian's arm64 libsimgrid3.32 with the amd64 package's headers
Version: 3.32
Libs: -L$arm/simgrid-arm64 -lsimgrid
Cflags: -I/usr/include
EOF
cat >"$arm/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER $triplet-gcc)
set(CMAKE_CXX_COMPILER $triplet-g++)
set(CMAKE_LIBRARY_ARCHITECTURE $triplet)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
EOF
export PKG_CONFIG_LIBDIR="$arm/simgrid-arm64:/usr/lib/$triplet/pkgconfig:/usr/share/pkgconfig"
# Configured every time: a configure that failed earlier leaves a cache but no build files.
cmake -S "$root" -B "$arm" -DCMAKE_TOOLCHAIN_FILE="$arm/toolchain.cmake" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${launcher[@]}" >"$arm/configure.log" 2>&1 || { tail -30 "$arm/configure.log"; exit 2; }
# meshinfer-sim, the program with the simulator: meshinfer hands `run` to it by exec, which qemu-user leaves to
# the host kernel (an aarch64 program there needs binfmt_misc).
echo "cross-arch: building $arm/cli/meshinfer-sim (aarch64) and $build/cli/meshinfer-sim (native)"
cmake --build "$arm" -j "$jobs" --target meshinfer-sim >"$arm/build.log" 2>&1 || { tail -30 "$arm/build.log"; exit 2; }
# Configured every time too, so both builds carry the tree's present git id (reports print it).
cmake -S "$root" -B "$build" "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$jobs" --target meshinfer-sim >"$arm/native-build.log" 2>&1 || { tail -30 "$arm/native-build.log"; exit 2; }
readelf -h "$arm/cli/meshinfer-sim" | grep -q AArch64 || { echo "cross-arch: $arm/cli/meshinfer-sim is not aarch64" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/cross-arch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
if [[ $# -eq 0 ]]; then
  set -- $(cd "$root" && ls scenarios/*.json scenarios/ci/*.json | grep -v scenario.schema.json)
fi

# run_one NAME OUT CMD...: runs one scenario, masks the output directory, prints the seconds taken.
run_one() {
  local s=$1 out=$2 start f
  shift 2
  start=$(date +%s.%N)
  (cd "$root" && "$@" run "$s" --out "$out/run" >"$out/console.log" 2>&1; echo "exit $?" >>"$out/console.log")
  sed -i '/^  requests [0-9]*\/[0-9]*  simulated/d' "$out/console.log"  # wall-clock redraws
  for f in "$out"/run/* "$out/console.log"; do [[ -f $f ]] && sed -i "s|$out|OUT|g" "$f"; done
  awk "BEGIN { print $(date +%s.%N) - $start }"
}

printf '%-48s %-8s %10s %10s %6s\n' scenario bytes x86-64_s qemu_s files
differ=0
for s in "$@"; do
  n="$(echo "$s" | tr / _ | sed 's/\.json$//')"
  mkdir -p "$work/x86/$n" "$work/arm/$n"
  tx=$(run_one "$s" "$work/x86/$n" "$build/cli/meshinfer-sim")
  ta=$(run_one "$s" "$work/arm/$n" qemu-aarch64 "$arm/cli/meshinfer-sim")
  files=$(find "$work/x86/$n" -type f | wc -l)
  if diff -r "$work/x86/$n" "$work/arm/$n" >"$work/$n.diff"; then verdict=same; else verdict=DIFFERS differ=1; fi
  printf '%-48s %-8s %10.1f %10.1f %6d\n' "$s" "$verdict" "$tx" "$ta" "$files"
  [[ $verdict == same ]] || head -20 "$work/$n.diff" | cut -c1-200
done
exit $differ
