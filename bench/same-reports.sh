#!/usr/bin/env bash
# Shows that a change left every report as it was:
#   bench/same-reports.sh [REV]          (default HEAD~1)
# Builds `meshinfer` of REV in a temporary git worktree and build directory, and of
# the working tree in $BUILD_DIR (default build), runs every shipped scenario
# (scenarios/*.json, scenarios/ci/*.json) with each binary from its own tree, masks
# the build's git id and the output directory, and diffs what they wrote:
# report.json, report.md, trace.json, report.html and the console output.
# Exit 0 when every byte is the same, 1 when anything differs (the diff is printed).
# Uses ccache when it is on PATH; set CCACHE_BASEDIR to share it between trees.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rev="${1:-HEAD~1}"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
sha="$(git -C "$root" rev-parse --verify "$rev^{commit}")"

work="$(mktemp -d "${TMPDIR:-/tmp}/same-reports.XXXXXX")"
cleanup() {
  git -C "$root" worktree remove --force "$work/src" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# build_meshinfer SRC BUILD: configures when needed and builds only the executable.
build_meshinfer() {
  [[ -f $2/CMakeCache.txt ]] || cmake -S "$1" -B "$2" "${launcher[@]}" >/dev/null
  cmake --build "$2" -j "$jobs" --target meshinfer >"$work/build.log" 2>&1 || {
    tail -30 "$work/build.log"
    exit 2
  }
}

echo "same-reports: building $rev ($(git -C "$root" rev-parse --short "$sha")) in $work/src"
git -C "$root" worktree add --quiet --detach "$work/src" "$sha"
build_meshinfer "$work/src" "$work/src/build"
echo "same-reports: building the working tree in $build"
build_meshinfer "$root" "$build"

# run_all TREE BIN OUT: every shipped scenario of TREE, run from TREE with BIN.
run_all() {
  local tree=$1 bin=$2 out=$3 git s n f
  mkdir -p "$out"
  git="$("$bin" --version | sed 's/^meshinfer [^ ]* (\([^)]*\)).*/\1/')"
  for s in "$tree"/scenarios/*.json "$tree"/scenarios/ci/*.json; do
    s="${s#"$tree"/}"
    [[ $(basename "$s") == scenario.schema.json ]] && continue
    n="$(echo "$s" | tr / _ | sed 's/\.json$//')"
    (cd "$tree" && "$bin" run "$s" --out "$out/$n" >"$out/$n.log" 2>&1; echo "exit $?" >>"$out/$n.log")
    # The progress line counts wall-clock redraws, not results.
    sed -i '/^  requests [0-9]*\/[0-9]*  simulated/d' "$out/$n.log"
    for f in "$out/$n"/* "$out/$n.log"; do
      [[ -f $f ]] && sed -i "s/$git/GIT/g; s|$out|OUT|g" "$f"
    done
  done
}

echo "same-reports: running every shipped scenario with both binaries"
run_all "$work/src" "$work/src/build/cli/meshinfer" "$work/base"
run_all "$root" "$build/cli/meshinfer" "$work/head"

count=$(find "$work/head" -type f | wc -l)
if diff -r "$work/base" "$work/head" >"$work/diff.txt"; then
  echo "same-reports: identical to $rev ($count files)"
else
  head -100 "$work/diff.txt"
  echo "same-reports: differs from $rev in $(grep -c '^diff \|^Only in' "$work/diff.txt") file(s)"
  exit 1
fi
