#!/usr/bin/env bash
# demo.sh - memhist's main job on an embedded default, no GPU needed.
#
# Builds memhist, then
#   1. records the C example program (examples/c/record_example.c) through the
#      recorder API and shows `memhist info` and `memhist report` on it;
#   2. simulates the default transformer training workload on the caching-
#      allocator simulator and writes everything memhist produces for it
#      (report, PNG timeline and segment view, flame graph of the peak,
#      memory_viz snapshot, Chrome trace, what-if under expandable segments,
#      layer attribution with a checkpointing plan, and report.html: every
#      answer on one interactive page, `memhist view`) into one folder;
#   3. simulates the same run on a smaller device and explains its OOM;
#   4. runs a real PyTorch script on the virtual device (when built) and writes
#      its page too (virtual-rtx4090-report.html).
# usage: scripts/demo.sh [OUTDIR]   (default: demo-out)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/demo-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
"$root/scripts/setup.sh"
echo "== building memhist"
"$root/scripts/build.sh" build -DMEMHIST_TESTS=ON
mh="$root/build/memhist"
has_cmd() { "$mh" help "$1" >/dev/null 2>&1; }

echo
echo "== 1. recording the C example through the recorder API"
"$root/build/example_record_example" "$out/example.memhist"
echo "\$ memhist info $out/example.memhist"
"$mh" info "$out/example.memhist"
echo
echo "\$ memhist report $out/example.memhist"
"$mh" report "$out/example.memhist"

if has_cmd simulate; then
    echo
    echo "== 2. simulating the default transformer training run"
    run="$out/transformer.memhist"
    "$mh" simulate -o "$run"
    "$mh" report "$run" | tee "$out/transformer-report.txt"
    "$mh" report --json "$run" >"$out/transformer-report.json"
    if has_cmd plot; then
        "$mh" plot "$run" -o "$out/transformer-timeline.png"
        "$mh" plot "$run" --kind segments -o "$out/transformer-segments.png"
    fi
    if has_cmd flame; then
        "$mh" flame "$run" -o "$out/transformer-flame.svg"
        "$mh" flame "$run" --folded -o "$out/transformer-flame.folded"
    fi
    has_cmd snapshot && "$mh" snapshot "$run" -o "$out/transformer-snapshot.pickle"
    has_cmd trace && "$mh" trace "$run" -o "$out/transformer-trace.json"
    has_cmd whatif && "$mh" whatif "$run" --alloc-conf expandable_segments:True | tee "$out/transformer-whatif.txt"
    has_cmd layers && "$mh" layers "$run" | tee "$out/transformer-layers.txt"
    has_cmd view && "$mh" view "$run" -o "$out/report.html"
    if has_cmd oom; then
        echo
        echo "== 3. the same training run on a 12 GiB device: why does it run out of memory?"
        "$mh" simulate --device-memory 12GiB -o "$out/oom.memhist"
        "$mh" oom "$out/oom.memhist" | tee "$out/oom-explanation.txt"
        has_cmd plot && "$mh" plot "$out/oom.memhist" --kind segments --at oom -o "$out/oom-segments.png"
    fi
fi

if [ -f "$root/build/vdevice/libcudart.so.13" ] && python3 -c "import torch" 2>/dev/null; then
    echo
    echo "== 4. a real PyTorch training script on a virtual RTX 4090 (no GPU): does it fit?"
    "$mh" simulate --gpu RTX4090 -o "$out/virtual-rtx4090.memhist" -- \
        python3 "$root/examples/python/train_gpt.py" --steps 3 | tee "$out/virtual-rtx4090-report.txt"
    has_cmd view && "$mh" view "$out/virtual-rtx4090.memhist" -o "$out/virtual-rtx4090-report.html"
fi

echo
echo "== outputs in $out:"
ls -1 "$out"
