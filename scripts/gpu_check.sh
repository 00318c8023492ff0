#!/usr/bin/env bash
# gpu_check.sh - on a machine with a GPU: build memhist against this machine's
# torch, run the GPU tests (ctest -L gpu: the examples recorded with `memhist
# record` checked against torch's own truth, the CUDA example under CUPTI, the
# simulator's fidelity to a real run, the checkpointing estimate against a real
# checkpointed run), run the libtorch example, and measure step-time overhead (no recording / memhist with
# stacks python and none / torch's _record_memory_history(stacks="python")).
#
#   scripts/gpu_check.sh [BUILD_DIR]        (default: build-gpu)
# Exits 77 when there is no GPU, 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
BUILD=${1:-build-gpu}
JOBS=${JOBS:-$(nproc)}

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "gpu_check: skipped: no CUDA device (torch.cuda.is_available() is False)"
  exit 77
fi

cmake -S . -B "$BUILD" -DMEMHIST_WITH_TORCH=ON -DMEMHIST_TESTS=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$JOBS"
MEMHIST="$SRC/$BUILD/memhist"
WORK="$SRC/$BUILD/gpu_check"
mkdir -p "$WORK"
status=0

echo "== bridge unit test"
(cd "$BUILD" && TORCH_SYMBOLIZE_MODE=dladdr ./test_torch_bridge) || status=1

echo "== GPU tests: recordings against torch's truth, CUDA example under CUPTI,"
echo "   simulator fidelity, checkpointing estimate against a real checkpointed run"
(cd "$BUILD" && ctest -L gpu --output-on-failure -V) || status=1

echo "== libtorch example"
if "$BUILD/example_cpp_train_libtorch" "$WORK/libtorch.memhist" 10; then
  "$MEMHIST" report "$WORK/libtorch.memhist" | head -20 || status=1
else
  status=1
fi

echo "== checkpointing example"
"$MEMHIST" record -o "$WORK/ckpt.memhist" -- python3 examples/python/train_gpt_checkpoint.py --layers-ckpt 0,1,2 \
  || status=1

echo "== overhead (median step time)"
STEPS=${STEPS:-60}
base=$(python3 tests/gpu/overhead.py none "$STEPS" | awk '/^step_ms_/ {print $2}')
mh_py=$("$MEMHIST" record -o "$WORK/ovh_py.memhist" --stacks python -- \
        env MH_OVERHEAD_LABEL=memhist_python python3 tests/gpu/overhead.py memhist "$STEPS" | awk '/^step_ms_/ {print $2}')
mh_none=$("$MEMHIST" record -o "$WORK/ovh_none.memhist" --stacks none -- \
          env MH_OVERHEAD_LABEL=memhist_none python3 tests/gpu/overhead.py memhist "$STEPS" | awk '/^step_ms_/ {print $2}')
th=$(python3 tests/gpu/overhead.py torch "$STEPS" | awk '/^step_ms_/ {print $2}')
echo "step_ms_none: $base"
echo "step_ms_memhist_python: $mh_py"
echo "step_ms_memhist_none: $mh_none"
echo "step_ms_torch_history_python: $th"
awk -v b="$base" -v p="$mh_py" -v n="$mh_none" -v t="$th" 'BEGIN {
  printf "ratio_memhist_python: %.4f\nratio_memhist_none: %.4f\nratio_torch_history_python: %.4f\n", p/b, n/b, t/b }'

if [ $status -ne 0 ]; then
  echo "gpu_check: FAILED"
else
  echo "gpu_check: all checks passed"
fi
exit $status
