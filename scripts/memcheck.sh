#!/usr/bin/env bash
# memcheck.sh BUILD_DIR - runs the CLI analyses (info, report, layers, oom,
# snapshot, plot, flame, view) on every test input under Valgrind memcheck, so that a read
# of uninitialised memory or any other memory error fails the build. Inputs:
# the .memhist files under tests/data, the snapshot pickles under
# tests/data/snapshots imported first, a short simulated run with an OOM, and
# the real torch snapshots of ../shared/data/torch-snapshots when that folder
# exists (said when it does not). Used by scripts/test.sh; about a minute on
# two cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/${1:-build}"
mh="$build/memhist"
if ! command -v valgrind >/dev/null; then
    echo "memcheck.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2
    exit 1
fi
[ -x "$mh" ] || { echo "memcheck.sh: $mh is not built" >&2; exit 1; }
work="$build/memcheck"
rm -rf "$work"
mkdir -p "$work/in" "$work/out" "$work/log"

inputs=()
for f in "$root"/tests/data/*.memhist "$root"/tests/data/*/*.memhist; do
    inputs+=("$f")
done
pickles=("$root"/tests/data/snapshots/small.*.pickle)
shared="$root/../shared/data/torch-snapshots"
if [ -d "$shared" ]; then
    pickles+=("$shared"/*.pickle "$shared"/*.pkl)
else
    echo "memcheck.sh: $shared is absent: real torch snapshots not checked"
fi
for p in "${pickles[@]}"; do
    out="$work/in/$(basename "${p%.*}").memhist"
    "$mh" import "$p" -o "$out" >/dev/null 2>&1 && inputs+=("$out")
done
small="layers=2,hidden=256,seq=256,batch=2"
"$mh" simulate --steps 3 --param "$small" -o "$work/in/sim.memhist" >/dev/null
"$mh" simulate --steps 3 --param layers=2 --device-memory 2GiB -o "$work/in/sim-oom.memhist" >/dev/null
inputs+=("$work/in/sim.memhist" "$work/in/sim-oom.memhist")

# one line per job: NAME ARGS... (OUT is replaced by a file under out/)
jobs="$work/jobs"
: >"$jobs"
for f in "${inputs[@]}"; do
    n="$(basename "$(dirname "$f")")-$(basename "${f%.memhist}")"
    for cmd in "info $f" "report $f" "report --json $f" "layers $f" "layers --json $f" \
        "oom $f" "oom --at peak $f" "snapshot $f -o OUT.pickle" "plot $f -o OUT.png" \
        "plot $f --kind segments -o OUT-seg.png" "flame $f -o OUT.svg" \
        "flame --at oom --by stack $f -o OUT-oom.svg" "view $f -o OUT.html"; do
        echo "$n ${cmd//OUT/$work/out/$n}" >>"$jobs"
    done
done

run_one() { # NAME ARGS...
    local name="$1" log
    shift
    log="$LOGDIR/$name-$1-$$-$RANDOM.log"
    # exit status 1 is a normal answer (no OOM in the file, nothing to plot);
    # 99 is memcheck's
    valgrind -q --error-exitcode=99 "$MH" "$@" >/dev/null 2>"$log"
    local rc=$?
    if [ $rc -eq 99 ] || [ $rc -gt 128 ]; then
        echo "FAIL (exit $rc): memhist $*"
        grep -m 12 -E '==[0-9]+== ' "$log" || tail -5 "$log"
        return 1
    fi
    return 0
}
export -f run_one
export MH="$mh" LOGDIR="$work/log"
total="$(wc -l <"$jobs")"
if xargs -P "$(nproc 2>/dev/null || echo 2)" -L 1 bash -c 'run_one "$@"' _ <"$jobs"; then
    echo "memcheck: $total analyses on ${#inputs[@]} inputs, no memory errors"
else
    echo "memcheck: memory errors (logs: $work/log)" >&2
    exit 1
fi
