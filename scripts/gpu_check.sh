#!/usr/bin/env bash
# gpu_check.sh - on a machine with a GPU: build memhist against this machine's
# torch, run the GPU tests (ctest -L gpu: the examples recorded with `memhist
# record` checked against torch's own truth, the CUDA example under CUPTI, the
# simulator's fidelity to a real run, the checkpointing estimate against a real
# checkpointed run, the virtual device against this GPU), run the libtorch
# example, and measure the recording overhead of memhist's and torch's stack
# modes (tests/bench/torch_stacks.py; ROUNDS and STEPS, default 4 and 60).
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

# The C build needs msgpack-c, libpng, zlib and Criterion: scripts/setup.sh
# installs them with apt where it can (torch is left as this machine has it).
if ! pkg-config --exists msgpack libpng zlib criterion 2>/dev/null; then
  MEMHIST_SKIP_PIP=1 scripts/setup.sh || {
    echo "gpu_check: the build needs msgpack-c, libpng, zlib and Criterion (apt: libmsgpack-dev" \
         "libpng-dev zlib1g-dev libcriterion-dev, pkg-config) and they could not be installed" >&2
    exit 1
  }
fi

# The python3 on PATH is the one with torch (a virtual environment, say).
cmake -S . -B "$BUILD" -DMEMHIST_WITH_TORCH=ON -DMEMHIST_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$BUILD" -j"$JOBS"
MEMHIST="$SRC/$BUILD/memhist"
WORK="$SRC/$BUILD/gpu_check"
mkdir -p "$WORK"
status=0

echo "== bridge unit test"
(cd "$BUILD" && TORCH_SYMBOLIZE_MODE=dladdr ./test_torch_bridge) || status=1

echo "== GPU tests: recordings against torch's truth, CUDA example under CUPTI,"
echo "   simulator fidelity, checkpointing estimate against a real checkpointed run,"
echo "   the virtual device against this GPU"
(cd "$BUILD" && ctest -L gpu --output-on-failure -V) || status=1

echo "== libtorch example"
if "$BUILD/example_cpp_train_libtorch" "$WORK/libtorch.memhist" 10; then
  "$MEMHIST" report "$WORK/libtorch.memhist" > "$WORK/libtorch.report" || status=1
  head -20 "$WORK/libtorch.report"
else
  status=1
fi

echo "== checkpointing example"
"$MEMHIST" record -o "$WORK/ckpt.memhist" -- python3 examples/python/train_gpt_checkpoint.py --layers-ckpt 0,1,2 \
  || status=1

# Step times on a GPU vary from process to process by more than the recorders
# cost, so the configurations alternate in rounds (tests/bench/torch_stacks.py).
echo "== recording overhead against torch's own history, alternating rounds"
MEMHIST_LIB_DIR="$SRC/$BUILD" PYTHONPATH="$SRC/src/python" python3 tests/bench/torch_stacks.py \
  --rounds "${ROUNDS:-4}" --steps "${STEPS:-60}" --out "$WORK/overhead" \
  --configs none,torch_python,torch_all,memhist_none,memhist_python,memhist_all || status=1

if [ $status -ne 0 ]; then
  echo "gpu_check: FAILED"
else
  echo "gpu_check: all checks passed"
fi
exit $status
