#!/usr/bin/env python3
"""pickle_cpython.py - the CPython side of bench_viz_pickle: times Python's C
pickler on the same content memhist wrote.

usage: pickle_cpython.py SNAPSHOT.pickle

Loads the file with pickle.loads (the reading figure), then dumps the loaded
dict again with pickle.dumps(protocol=4) (the writing figure; the dict keeps
the file's sharing of frame lists, so both sides write the same content).
Prints `name: value` lines: cpython_loads_s, cpython_dumps_s, cpython_bytes.
"""
import gc
import pickle
import sys
import time


def best_of(n, fn):
    best = None
    for _ in range(n):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    gc.disable()
    loads_s, obj = best_of(3, lambda: pickle.loads(data))
    dumps_s, out = best_of(3, lambda: pickle.dumps(obj, protocol=4))
    print("cpython_loads_s: %.4f" % loads_s)
    print("cpython_dumps_s: %.4f" % dumps_s)
    print("cpython_bytes: %d" % len(out))


if __name__ == "__main__":
    main()
