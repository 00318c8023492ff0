#!/usr/bin/env bash
# regen-golden.sh - regenerates the golden PNGs of the plot tests
# (tests/data/golden/*.png) from the current renderer and prints what changed.
#
# usage: scripts/regen-golden.sh [BUILD_DIR]   (default: build)
# Builds test_viz_plot_render, runs it with MH_REGEN_GOLDEN pointing at a
# scratch folder, then copies the images over the committed ones and reports,
# per image, unchanged / changed (sizes and, with Pillow, differing pixels) / new.
# The .memhist inputs the CLI tests plot are rewritten too. Then the CLI golden
# outputs (tests/cli/*.out) are rewritten from the built memhist and the files
# that changed are listed (review them with git diff before committing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
golden="$root/tests/data/golden"
cmake --build "$build" --target test_viz_plot_render memhist_cli -j2 >/dev/null
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
MH_REGEN_GOLDEN="$scratch" "$build/tests/test_viz_plot_render" --filter 'plot_golden/*' --jobs 1 >/dev/null
mkdir -p "$golden"
for new in "$scratch"/*; do
  name="$(basename "$new")"
  old="$golden/$name"
  if [[ "$name" == *.memhist ]]; then
    # inputs carry the writer's host/pid/start metadata, so they always differ
    echo "input      $name (rewritten)"
  elif [[ ! -f "$old" ]]; then
    echo "new        $name ($(stat -c %s "$new") bytes)"
  elif cmp -s "$old" "$new"; then
    echo "unchanged  $name"
  else
    pixels="$(python3 - "$old" "$new" <<'PY' 2>/dev/null || echo "pixel diff needs Pillow"
import sys
from PIL import Image, ImageChops
a, b = (Image.open(p).convert("RGB") for p in sys.argv[1:3])
if a.size != b.size:
    print(f"size {a.size} -> {b.size}")
else:
    d = ImageChops.difference(a, b).convert("L").point(lambda v: 255 if v else 0)
    print(f"{sum(1 for v in d.getdata() if v)} pixels differ")
PY
)"
    echo "changed    $name ($(stat -c %s "$old") -> $(stat -c %s "$new") bytes; $pixels)"
  fi
  cp "$new" "$old"
done
MEMHIST="$build/memhist" MEMHIST_REGEN=1 python3 "$root/tests/python/test_cli_golden.py" >/dev/null
git -C "$root" status --short -- tests/cli | sed 's/^/cli golden /'
