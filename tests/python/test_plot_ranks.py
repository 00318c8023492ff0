#!/usr/bin/env python3
"""test_plot_ranks.py - `memhist plot` with several files (one per rank) and
with --color category, as a user runs them on simulated runs: one panel per
file stacked vertically (the image is N times the panel height), a title line
in every panel, the worst rank's title longer (it carries the note), clear
usage errors (exit 2) for --kind segments with several files and for a bad
--color, and a category-coloured timeline that differs from the default one.
With 8 files the panels give way to a heat map above the worst rank's panel
(the worst rank the one `report` names, its cell outlined in black);
--ranks panels|heatmap chooses.
Images are decoded here (PNG, 8-bit RGB) to look at their rows. Skipped when
`memhist simulate` is not built. Environment: MEMHIST."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

MEMHIST = os.environ.get("MEMHIST", "")
FAILURES = []
TEXT = (0x22, 0x22, 0x22)


def run(*args):
    p = subprocess.run([MEMHIST, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def decode_png(path):
    """(width, height, rows of bytes) of an 8-bit RGB PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype != 2:
                return None
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * 3, [], bytearray(w * 3)
    for y in range(h):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def title_extent(img, y0, y1):
    """Rightmost x of title-coloured pixels in rows y0..y1 (-1 if none)."""
    w, _, rows = img
    right = -1
    for y in range(y0, y1 + 1):
        row = rows[y]
        for x in range(w):
            if tuple(row[3 * x:3 * x + 3]) == TEXT:
                right = max(right, x)
    return right


def black_pixels(img, y0, y1):
    w, _, rows = img
    return sum(1 for y in range(y0, y1) for x in range(w) if rows[y][3 * x:3 * x + 3] == b"\0\0\0")


def check_heatmap(tmp):
    files = []
    for r in range(8):
        path = os.path.join(tmp, "job.memhist.rank%d" % r)
        extra = ["--param", "batch=10"] if r == 5 else []
        rc, _, err = run("simulate", "--seed", str(r + 1), "--steps", "4", "-o", path, *extra)
        check(rc == 0, "simulated rank %d (%s)" % (r, err.strip()[:100]))
        files.append(path)
    out = os.path.join(tmp, "job.png")
    rc, _, err = run("plot", *files, "-o", out)
    img = decode_png(out) if rc == 0 else None
    check(img is not None and img[0] == 1280 and 520 < img[1] < 2 * 520,
          "8 files -> a heat map above one panel (%s, %s)" % (img[:2] if img else None, err.strip()))
    rc, rep, _ = run("report", "--json", *files)
    worst = json.loads(rep)["worst_rank"]["file"] if rc == 0 else "?"
    check(worst == files[5] and ("worst rank by peak reserved: %s;" % worst) in err,
          "the plot's worst rank is report's (%s)" % worst)
    if img:
        check(black_pixels(img, 0, img[1] - 520) > 20, "the worst cell is outlined in black")
        check(black_pixels(img, 0, 60) == 0, "nothing else in the heat map's title is black")
    rc, _, err = run("plot", *files, "-o", out, "--ranks", "panels")
    img = decode_png(out) if rc == 0 else None
    check(img is not None and img[1] == 8 * 520, "--ranks panels: one panel per file")
    rc, _, err = run("plot", *files[:2], "-o", out, "--ranks", "heatmap")
    img = decode_png(out) if rc == 0 else None
    check(img is not None and 520 < img[1] < 2 * 520, "--ranks heatmap with two files")
    rc, _, err = run("plot", *files[:2], "-o", out, "--ranks", "pie")
    check(rc == 2 and "--ranks is 'panels' or 'heatmap'" in err, "bad --ranks is exit 2")
    rc, _, err = run("plot", files[0], "-o", out, "--ranks", "heatmap")
    check(rc == 2 and "--ranks applies to several files" in err, "--ranks with one file is exit 2")


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: MEMHIST is not set to the memhist binary")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for seed in ("1", "2"):
            path = os.path.join(tmp, "rank%s.memhist" % seed)
            rc, _, err = run("simulate", "--seed", seed, "--steps", "3", "-o", path)
            if rc != 0:
                print("skip: memhist simulate did not run (%s)" % err.strip()[:120])
                return 77
            runs.append(path)
        out = os.path.join(tmp, "ranks.png")
        rc, _, err = run("plot", *runs, "-o", out)
        img = decode_png(out) if rc == 0 else None
        check(img is not None and img[:2] == (1280, 1040),
              "two files -> 1280x1040, two panels of 520 (%s)" % err.strip())
        if img:
            t0, t1 = title_extent(img, 8, 28), title_extent(img, 528, 548)
            check(t0 > 300 and t1 > 300, "both panels have a title line (%d, %d)" % (t0, t1))
            check(abs(t0 - t1) > 100, "one title carries the worst-rank note (%d vs %d)" % (t0, t1))
        rc, _, err = run("plot", *runs, runs[0], "-o", out, "--height", "400", "--width", "900")
        img = decode_png(out) if rc == 0 else None
        check(img is not None and img[:2] == (900, 1200), "three panels of 400 -> 900x1200")
        rc, _, err = run("plot", *runs, "-o", out, "--kind", "segments")
        check(rc == 2 and "--kind segments draws one file" in err,
              "segments with two files is a usage error (%d: %s)" % (rc, err.strip()))
        rc, _, err = run("plot", *runs, "-o", out, "--height", "9000")
        check(rc == 1 and "at most 16384 pixels tall" in err, "too tall is refused (%s)" % err.strip())

        stack_png, cat_png = os.path.join(tmp, "stack.png"), os.path.join(tmp, "cat.png")
        rc1, _, _ = run("plot", runs[0], "-o", stack_png)
        rc2, _, err = run("plot", runs[0], "-o", cat_png, "--color", "category")
        ok = rc1 == 0 and rc2 == 0 and decode_png(cat_png)[:2] == (1280, 760)
        check(ok, "--color category gives a 1280x760 image (%s)" % err.strip())
        if ok:
            with open(stack_png, "rb") as a, open(cat_png, "rb") as b:
                check(a.read() != b.read(), "--color category differs from the default")
        rc, _, err = run("plot", runs[0], "-o", out, "--color", "pie")
        check(rc == 2 and "--color is 'stack' or 'category'" in err, "bad --color is exit 2")
        rc, _, err = run("plot", runs[0], "-o", out, "--color", "category", "--kind", "segments")
        check(rc == 2 and "--color applies to the timeline" in err,
              "--color with segments is exit 2")
        check_heatmap(tmp)
        rc, text, _ = run("help", "plot")
        check(rc == 0 and "--color stack|category" in text and "FILE..." in text,
              "help lists --color and several files")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
