#!/usr/bin/env bash
# vdevice-symbols.sh - regenerates src/vdevice/symbols/*.txt, the committed
# lists of every function NVIDIA's libraries export, which the virtual device's
# stand-in libraries (src/vdevice) must export too. Reads the libraries of the
# pip-installed torch's nvidia wheels (libcudart, libcublas, libcublasLt) and
# the CUDA toolkit's driver stub (libcuda). NVML ships no library without a
# driver: its list is the NVML entry points torch looks up, kept by hand.
# Usage: scripts/vdevice-symbols.sh [CUDA_TOOLKIT_DIR]   (default /usr/local/cuda)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/src/vdevice/symbols"
toolkit="${1:-/usr/local/cuda}"
wheel="$(python3 -c 'import os, nvidia; print(os.path.dirname(nvidia.__path__[0]) + "/nvidia")')"
list() { # FILE OUT: exported function names, sorted
    nm -D --defined-only "$1" | awk '$2 == "T" || $2 == "W" || $2 == "i" {sub(/@.*/, "", $3); print $3}' | sort -u >"$2"
    echo "vdevice-symbols: $(wc -l <"$2") functions from $1"
}
list "$wheel/cu13/lib/libcudart.so.13" "$out/cudart.txt"
list "$wheel/cu13/lib/libcublas.so.13" "$out/cublas.txt"
list "$wheel/cu13/lib/libcublasLt.so.13" "$out/cublasLt.txt"
list "$toolkit/lib64/stubs/libcuda.so" "$out/cuda.txt"
