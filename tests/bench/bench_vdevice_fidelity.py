#!/usr/bin/env python3
"""bench_vdevice_fidelity.py - how faithfully memhist's caching-allocator
simulator reproduces PyTorch's real allocator. Records every ground-truth
case of tests/vdevice/check_workload.py on the virtual device (torch's real
allocator, no GPU), replays each recording with `memhist whatif` under the
recorded settings and prints, per case, the share of allocations the
simulator placed at torch's address, the share of allocator events
reproduced in order, and the peak-reserved difference; then the totals.

    python tests/bench/bench_vdevice_fidelity.py    (MEMHIST: the CLI)

Exits 77 (skipped) without torch or the memhist CLI.
"""
import os
import sys
import tempfile

SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "vdevice"))
import check_workload as cw  # noqa: E402


def main():
    memhist = cw.memhist_bin()
    cw.skip_unless_ready(memhist)
    placed = allocs = exact_peak = 0
    rows = []
    for name in cw.CASES:
        with tempfile.TemporaryDirectory(prefix="mh-fid-") as work:
            rc, rec, _, _ = cw.record_case(memhist, name, work, truth=False)
            fid = cw.fidelity(memhist, rec, cw.CASES[name]["whatif"]) if os.path.exists(rec) else None
        if fid is None:
            print("sim_fidelity_%s: not measured (exit %d)" % (name, rc))
            continue
        rows.append((name, fid))
        placed += fid["placed"]
        allocs += fid["allocs"]
        exact_peak += fid["simulated_peak_reserved"] == fid["recorded_peak_reserved"]
    print("\n%-20s %12s %10s %14s" % ("case", "placements", "in order", "peak reserved"))
    for name, f in rows:
        diff = f["simulated_peak_reserved"] - f["recorded_peak_reserved"]
        print("%-20s %11.2f%% %9.2f%% %+13d B" % (name, 100.0 * f["placed"] / max(f["allocs"], 1),
                                                f["match_percent"], diff))
    for name, f in rows:
        print("sim_fidelity_placement_percent_%s: %.2f" % (name, 100.0 * f["placed"] / max(f["allocs"], 1)))
        print("sim_fidelity_peak_reserved_diff_bytes_%s: %d"
              % (name, f["simulated_peak_reserved"] - f["recorded_peak_reserved"]))
    print("sim_fidelity_placement_percent: %.2f (%d of %d allocations)" % (100.0 * placed / max(allocs, 1),
                                                                        placed, allocs))
    print("sim_fidelity_same_peak_reserved: %d of %d cases" % (exact_peak, len(rows)))
    return 0 if len(rows) == len(cw.CASES) else 1


if __name__ == "__main__":
    sys.exit(main())
