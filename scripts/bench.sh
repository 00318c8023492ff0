#!/usr/bin/env bash
# bench.sh - builds an optimized memhist and runs every benchmark in
# tests/bench (recorder emit and drain, bytes per event, reader and model
# replay, simulator, PNG timeline against matplotlib, pickle against CPython).
# Each benchmark prints "name: value" lines; the README's table quotes them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" build-bench -DCMAKE_BUILD_TYPE=Release -DMEMHIST_TESTS=ON \
    -DMEMHIST_BENCH=ON -DMEMHIST_WITH_TORCH=OFF
export MEMHIST="$root/build-bench/memhist" MH_SOURCE_DIR="$root" MH_BINARY_DIR="$root/build-bench"
cd "$root/build-bench/tests"
status=0
for b in ./bench_*; do
    [ -x "$b" ] || continue
    echo "== ${b#./}"
    "$b" || { echo "${b#./} failed" >&2; status=1; }
done
exit $status
