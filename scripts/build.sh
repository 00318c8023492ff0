#!/usr/bin/env bash
# build.sh DIR [cmake options...] - configures and builds memhist into DIR
# (relative to the repository root). Used by demo.sh, test.sh and bench.sh.
# Logs go to DIR/build.log; on failure the end of the log is printed.
# MEMHIST_TARGETS="a b" builds only those targets.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"
shift
mkdir -p "$root/$dir"
log="$root/$dir/build.log"
if ! { cmake -S "$root" -B "$root/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
       cmake --build "$root/$dir" -j "$(nproc 2>/dev/null || echo 2)" \
           ${MEMHIST_TARGETS:+--target $MEMHIST_TARGETS}; } >"$log" 2>&1; then
    tail -40 "$log"
    echo "build.sh: building $dir failed (full log: $log)" >&2
    exit 1
fi
