#!/usr/bin/env bash
# bench.sh - builds an optimized memhist and runs every benchmark in
# tests/bench (recorder emit and drain, bytes per event, reader and model
# replay, the growth observer, simulator, PNG timeline against matplotlib,
# pickle against CPython),
# then the Python benchmarks tests/bench/bench_*.py (the export and queries over its
# dataset; on the virtual device: simulator fidelity against torch's real allocator,
# recorder overhead; time and peak memory of import and of whatif on long runs), then
# the recording overhead of the torch bridge's stack modes against torch's own
# recorder (tests/bench/torch_stacks.py) on a GPU, else on memhist's virtual
# device when it is built, else it says why not.
# Each benchmark prints "name: value" lines; the README's table quotes them.
# A Python benchmark that exits 77 was skipped (it says why).
# TORCH_BENCH=0 leaves the torch stacks benchmark out; ROUNDS and STEPS size it;
# INSTRUCTIONS=1 adds its instruction counts per step on the virtual device,
# torch's recorder among them for the ratio memhist/torch (valgrind; about
# five minutes per configuration on 2 cores).
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

torch_bench() {
    local dir="$root/build-bench-torch" vd
    if ! python3 -c 'import torch' 2>/dev/null; then
        echo "== torch_stacks: skipped: python3 cannot import torch"
        return 0
    fi
    "$root/scripts/build.sh" build-bench-torch -DCMAKE_BUILD_TYPE=Release -DMEMHIST_TESTS=OFF \
        -DMEMHIST_BENCH=OFF -DMEMHIST_WITH_TORCH=ON
    export MEMHIST_LIB_DIR="$dir" PYTHONPATH="$root/src/python${PYTHONPATH:+:$PYTHONPATH}"
    echo "== torch_stacks"
    if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        python3 "$root/tests/bench/torch_stacks.py"
    elif [ -e "$dir/vdevice/libcuda.so.1" ]; then
        vd="$dir/vdevice"
        echo "on the virtual device (kernels do nothing: the step is host work only)"
        (   # the virtual device for these runs only
            export MEMHIST_VDEVICE=1
            export LD_PRELOAD="$vd/libcuda.so.1:$vd/libcudart.so.13:$vd/libcublas.so.13:$vd/libcublasLt.so.13:$vd/libnvidia-ml.so.1"
            python3 "$root/tests/bench/torch_stacks.py"
            if [ "${INSTRUCTIONS:-0}" = 1 ]; then
                python3 "$root/tests/bench/torch_stacks.py" --instructions \
                    --configs none,torch_python,memhist_none,memhist_python,memhist_none_noscopes,memhist_python_noscopes
            fi
        )
    else
        echo "torch_stacks: skipped: no GPU and no virtual device built"
    fi
}
if [ "${TORCH_BENCH:-1}" != 0 ]; then
    torch_bench || { echo "torch_stacks failed" >&2; status=1; }
fi
exit $status
