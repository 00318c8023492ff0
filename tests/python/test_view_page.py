"""`memhist view`'s page in a real browser (headless Chromium through chromedriver,
viewer_harness.Driver), opened from file:// as a user opens it.

On a simulated run, an OOM run, a cut recording, two rank files and (where the virtual
device is built) a recording of tests/vdevice/gpt_train.py, each page must draw with no
console error, no uncaught exception and no network request. Then, against the other
commands' JSON and the recording's own events (memhist.read()):
- the peaks shown (exact bytes and their text) are `report --json`'s;
- the whole-run level's site groups add up to its allocated maxima;
- a click on the timeline at the allocated peak shows the peak's moment, and the layers
  listed there start with `layers --json`'s largest layer;
- a double-click on a step zooms to it and lists exactly that step's allocator events
  (count, indices and kinds from the events table), and the peak's step keeps its events
  in a run whose steps do not all fit;
- the OOM run has one card per OOM with `oom --json`'s request; the others have none;
- typing in the search box narrows the frame list to frames that match, and a query
  matching nothing empties it;
- the cut recording's page says it is damaged and where;
- two rank files give the rank table and the heat map, and a rank's row opens that rank;
- an output that is one of the inputs is refused and leaves the input alone.
Skips (77) without Chromium and chromedriver (scripts/setup.sh --viewer installs them).
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402
import viewer_harness as vh  # noqa: E402

ROOT = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MH_BINARY_DIR", os.path.join(ROOT, "build"))

STATE = """
const v = window.mhView;
return v ? {ready: v.ready, errors: v.errors, state: v.ready ? v.state() : null} : null;
"""

# the canvas point of an event index, as the page maps it (70 px left margin, 10 right)
POINT = """
const c = document.querySelector('[data-testid=timeline]'), r = c.getBoundingClientRect();
const s = window.mhView.state(), W = r.width - 80;
return [r.left + 70 + (arguments[0] - s.lo) / (s.hi - s.lo) * W, r.top + r.height / 2];
"""

MOUSE = """
const c = document.querySelector('[data-testid=timeline]');
for (const type of arguments[2])
  (type === 'mouseup' ? window : c).dispatchEvent(new MouseEvent(type,
    {bubbles: true, clientX: arguments[0], clientY: arguments[1]}));
if (arguments[2].includes('mouseup'))  // a click's mouseup lands on the canvas
  c.dispatchEvent(new MouseEvent('mouseup', {bubbles: true, clientX: arguments[0], clientY: arguments[1]}));
return window.mhView.state();
"""

ROWS = """
return [...document.querySelectorAll('[data-testid=' + arguments[0] + '] tbody tr')]
  .map(tr => ({name: tr.dataset.name || null, path: tr.dataset.path || null,
               cells: [...tr.children].map(td => td.textContent)}));
"""

SEARCH = """
const q = document.querySelector('[data-testid=search]');
q.value = arguments[0];
q.dispatchEvent(new Event('input', {bubbles: true}));
return true;
"""


def human(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, i = float(b), 0
    while v >= 1024 and i < 4:
        v /= 1024
        i += 1
    return "%d B" % b if i == 0 else "%.2f %s" % (v, units[i])


class Page:
    def __init__(self, drv, path):
        self.drv, self.url = drv, "file://" + os.path.abspath(path)
        drv.requests()  # forget what came before
        drv.s("POST", "/url", {"url": self.url})
        t0 = time.monotonic()
        st = None
        while time.monotonic() - t0 < 60:
            st = drv.script(STATE)
            if st and (st["ready"] or st["errors"]):
                break
            time.sleep(0.1)
        if not st or not st["ready"]:
            sc.fail("%s: the page did not get ready: %s %s" % (path, st, drv.severe()))
        self.name = os.path.basename(path)

    def clean(self):
        errors = self.drv.script(STATE)["errors"] + self.drv.severe()
        if errors:
            sc.fail("%s: errors in the page: %s" % (self.name, errors[:3]))
        others = [u for u in self.drv.requests() if u != self.url and not u.startswith("data:")]
        if others:
            sc.fail("%s: the page made network requests: %s" % (self.name, others[:3]))

    def js(self, src, *args):
        return self.drv.script(src, *args)

    def rows(self, testid):
        return self.js(ROWS, testid)

    def attr(self, testid, name):
        return self.js("const e = document.querySelector('[data-testid=%s]');"
                       "return e ? e.getAttribute(arguments[0]) : null;" % testid, name)

    def text(self, testid):
        return self.js("const e = document.querySelector('[data-testid=%s]');"
                       "return e ? e.textContent : null;" % testid)

    def count(self, testid):
        return self.js("return document.querySelectorAll('[data-testid=%s]').length;" % testid)

    def mouse(self, index, types):
        x, y = self.js(POINT, index)
        return self.js(MOUSE, x, y, types)

    def search(self, q):
        self.js(SEARCH, q)


def cli_json(*args):
    return json.loads(sc.run(*args, "--json").stdout)


def make_page(src, out):
    p = sc.run("view", src, "-o", out)
    if "wrote %s" % out not in p.stderr:
        sc.fail("view %s: no status line: %s" % (src, p.stderr))
    return out


def check_peaks(pg, report):
    dev = report["files"][0]["devices"][0]
    for key in ("peak_allocated", "peak_reserved"):
        shown = pg.attr(key.replace("_", "-"), "data-bytes")
        text = pg.text(key.replace("_", "-"))
        if shown is None or int(shown) != dev[key] or human(dev[key]) not in text:
            sc.fail("%s: %s shown as %s (%r), report --json says %d" % (pg.name, key, shown, text,
                                                                       dev[key]))
    print("%s: peaks %s / %s as report --json" % (pg.name, human(dev["peak_allocated"]),
                                                 human(dev["peak_reserved"])))


def check_click_peak(pg, layers):
    data = pg.js("return JSON.parse(document.getElementById('mh-data').textContent)"
                 ".files[0].devices[0].peak_allocated;")
    pg.js("window.mhView.zoomTo(0, %d); return 1;" % (data["index"] * 2 + 10))
    pg.mouse(data["index"], ["mousedown", "mouseup"])
    kind, index = pg.attr("moment-title", "data-kind"), pg.attr("moment-title", "data-index")
    if kind != "peak" or int(index) != data["index"]:
        sc.fail("%s: a click at the peak shows the %s moment at event %s, not the peak's %d" % (
            pg.name, kind, index, data["index"]))
    top = layers["files"][0]["devices"][0]["layers"][0]["layer"]
    listed = pg.rows("peak-layers")
    if not listed or listed[0]["name"] != top:
        sc.fail("%s: at the peak the page lists %s first, layers --json %s" % (
            pg.name, listed[0]["name"] if listed else None, top))
    if not pg.rows("moment-list"):
        sc.fail("%s: nothing listed as live at the peak" % pg.name)
    print("%s: a click at the peak shows it, top layer %s as layers --json" % (pg.name, top))


def step_events(path, step):
    """(event_index, kind) of the step's allocator events on its device, from the tables."""
    sys.path.insert(0, os.path.join(BUILD, "python"))
    import memhist  # noqa: E402
    ev = memhist.read(path, tables=["events"]).events.to_pylist()
    kinds = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
             "segment_map", "segment_unmap", "oom"}
    dev = min(e["device"] for e in ev if e["kind"] in kinds)
    return sorted((e["event_index"], e["kind"]) for e in ev
                  if e["kind"] in kinds and e["step"] == step and e["device"] == dev
                  and not e["preexisting"])


def check_zoom_step(pg, path, step):
    spans = pg.js("return JSON.parse(document.getElementById('mh-data').textContent)"
                  ".files[0].devices[0].timeline.spans;")
    span = next(s for s in spans if s[0] == step)
    pg.js("window.mhView.zoomTo(0, %d); return 1;" % spans[-1][2])
    st = pg.mouse((span[1] + span[2]) / 2, ["dblclick"])
    if st["mode"] != "events" or st["lo"] > span[1] or st["hi"] < span[2]:
        sc.fail("%s: a double-click on step %d shows %s over %.0f..%.0f, not its events %d..%d" % (
            pg.name, step, st["mode"], st["lo"], st["hi"], span[1], span[2]))
    shown = pg.rows("events-table")
    want = step_events(path, step)
    got = sorted((int(r["cells"][0].replace(",", "")), r["cells"][1]) for r in shown
                 if r["cells"][5] == "step %d" % step)
    if len(shown) >= 4000:  # the page lists the first 4000 in view
        sc.fail("%s: step %d has too many events for this check" % (pg.name, step))
    if got != want:
        sc.fail("%s: step %d lists %d events, the recording has %d (first difference %s)" % (
            pg.name, step, len(got), len(want),
            next(((a, b) for a, b in zip(got, want) if a != b), None)))
    print("%s: zoomed to step %d: its %d events listed" % (pg.name, step, len(got)))


def check_peak_step(pg):
    """The peak's step keeps its events, however many steps come before it."""
    st = pg.js("[...document.querySelectorAll('#tl-info button')]"
               ".find(b => b.textContent.includes('peak step')).click();"
               "return window.mhView.state();")
    if st["mode"] != "events" or not pg.rows("events-table"):
        sc.fail("%s: zoomed to the peak's step, the page shows %s" % (pg.name, st["mode"]))
    print("%s: the peak's step lists its events" % pg.name)


def check_search(pg):
    before = pg.rows("moment-list")
    word = "forward"
    pg.search(word)
    after = pg.rows("moment-list")
    bad = [r["cells"][0] for r in after if word not in (r["cells"][0] + (r["path"] or "")).lower()]
    if not after or bad or len(after) == len(before) and before == after:
        sc.fail("%s: search %r lists %d frames (of %d), non-matching: %s" % (
            pg.name, word, len(after), len(before), bad[:3]))
    pg.search("no-such-frame-anywhere")
    if pg.rows("moment-list"):
        sc.fail("%s: a search matching nothing still lists frames" % pg.name)
    pg.search("")
    print("%s: search %r narrows %d frames to %d" % (pg.name, word, len(before), len(after)))


def check_oom(pg, src):
    cases = cli_json("oom", src)["files"][0]["cases"]
    n = pg.count("oom-card")
    requests = pg.js("return [...document.querySelectorAll('[data-testid=oom-card]')]"
                     ".map(c => +c.dataset.request);")
    if n != len(cases) or requests != [c["request"] for c in cases]:
        sc.fail("%s: %d OOM cards %s, oom --json has %d %s" % (
            pg.name, n, requests, len(cases), [c["request"] for c in cases]))
    print("%s: %d OOM card(s) as oom --json" % (pg.name, n))


def check_stacking(pg):
    """The whole-run level's site groups add up to its allocated maxima (KiB, each rounded
    up), and the page draws them."""
    lv = pg.js("return JSON.parse(document.getElementById('mh-data').textContent)"
               ".files[0].devices[0].timeline.levels[0];")
    ng = len(lv["groups"]) + 1
    off = [b for b in range(lv["buckets"])
           if not 0 <= sum(lv["group_bytes"][b * ng:(b + 1) * ng]) - lv["amax"][b] <= ng]
    if ng < 2 or off or not pg.count("group-legend"):
        sc.fail("%s: %d site groups, %d buckets whose groups do not add up (first %s)" % (
            pg.name, ng - 1, len(off), off[:1]))
    print("%s: %d sites stacked, adding up in every bucket" % (pg.name, ng - 1))


def full_check(drv, d, src, step):
    html = make_page(src, os.path.join(d, os.path.basename(src) + ".html"))
    pg = Page(drv, html)
    pg.clean()
    check_peaks(pg, cli_json("report", src))
    check_stacking(pg)
    check_click_peak(pg, cli_json("layers", src))
    check_zoom_step(pg, src, step)
    check_peak_step(pg)
    check_search(pg)
    pg.clean()
    return pg


def check_damaged(drv, d, src):
    cut = os.path.join(d, "cut.memhist")
    with open(src, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    pg = Page(drv, make_page(cut, os.path.join(d, "cut.html")))
    pg.clean()
    notes = pg.text("notes")
    if "damaged" not in notes or "missing" not in notes:
        sc.fail("cut.html does not say what is missing: %r" % notes)
    print("cut recording: %s" % notes[:100])


def check_ranks(drv, d):
    files = []
    for r, steps in ((0, 4), (1, 6)):
        files.append(os.path.join(d, "job.rank%d.memhist" % r))
        sc.run("simulate", "--steps", str(steps), "--seed", str(r + 1), "-o", files[-1])
    html = os.path.join(d, "job.html")
    sc.run("view", *files, "-o", html)
    pg = Page(drv, html)
    pg.clean()
    rows = pg.rows("rank-table")
    if len(rows) != 2 or not pg.count("heat-map"):
        sc.fail("job.html: %d rank rows, heat map %d" % (len(rows), pg.count("heat-map")))
    pg.js("document.querySelectorAll('[data-testid=rank-row]')[1].click(); return 1;")
    if pg.js("return window.mhView.state().file;") != 1:
        sc.fail("job.html: a click on rank 1's row does not open it")
    pg.clean()
    print("two ranks: rank table, heat map, rank 1 opens")


def check_refused(d, src):
    before = os.path.getsize(src)
    p = sc.run("view", src, "-o", src, check=False)
    if p.returncode == 0 or os.path.getsize(src) != before:
        sc.fail("view FILE -o FILE was not refused: rc %d, %s" % (p.returncode, p.stderr))
    print("an output that is the input is refused: %s" % p.stderr.strip().splitlines()[-1])


def vdevice_recording(d):
    lib = os.path.join(BUILD, "vdevice")
    if not os.path.isdir(lib):
        print("no virtual device built (%s): the torch program's page is not checked" % lib)
        return None
    out = os.path.join(d, "gpt.memhist")
    script = os.path.join(ROOT, "tests", "vdevice", "gpt_train.py")
    p = sc.run("simulate", "-o", out, "--", sys.executable, script, check=False)
    if p.returncode != 0:
        sc.fail("simulate gpt_train.py failed: %s" % p.stderr[-2000:])
    return out


def main():
    try:
        chrome, driver = vh.browser()
    except vh.Unavailable as e:
        sc.skip(str(e))
    d = sc.workdir("view_page")
    sim = os.path.join(d, "sim.memhist")
    sc.run("simulate", "--steps", "20", "-o", sim)
    oom = os.path.join(d, "oom.memhist")
    sc.run("simulate", "--steps", "6", "--device-memory", "12GiB", "-o", oom, check=False)
    gpt = vdevice_recording(d)
    with open(os.path.join(d, "chromedriver.log"), "wb") as log:
        drv = vh.Driver(chrome, driver, log, network_log=True)
        try:
            pg = full_check(drv, d, sim, 2)
            check_oom(pg, sim)
            pg = Page(drv, make_page(oom, os.path.join(d, "oom.html")))
            pg.clean()
            check_peaks(pg, cli_json("report", oom))
            check_oom(pg, oom)
            if gpt:
                pg = full_check(drv, d, gpt, 1)
                check_oom(pg, gpt)
            check_damaged(drv, d, sim)
            check_ranks(drv, d)
        finally:
            drv.close()
    check_refused(d, sim)
    print("ok")


if __name__ == "__main__":
    main()
