#!/usr/bin/env bash
# bench.sh - builds an optimized memhist and runs every benchmark in
# tests/bench (recorder emit and drain, bytes per event, reader and model
# replay, simulator, PNG timeline against matplotlib, pickle against CPython),
# then the Python benchmarks tests/bench/bench_*.py (on the virtual device:
# simulator fidelity against torch's real allocator, recorder overhead).
# Each benchmark prints "name: value" lines; the README's table quotes them.
# A Python benchmark that exits 77 was skipped (it says why).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" build-bench -DCMAKE_BUILD_TYPE=Release -DMEMHIST_TESTS=ON \
    -DMEMHIST_BENCH=ON
export MEMHIST="$root/build-bench/memhist" MH_SOURCE_DIR="$root" MH_BINARY_DIR="$root/build-bench"
cd "$root/build-bench/tests"
status=0
for b in ./bench_*; do
    [ -x "$b" ] || continue
    echo "== ${b#./}"
    "$b" || { echo "${b#./} failed" >&2; status=1; }
done
for b in "$root"/tests/bench/bench_*.py; do
    echo "== $(basename "$b" .py)"
    rc=0
    python3 "$b" || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || { echo "$(basename "$b") failed" >&2; status=1; }
done
exit $status
