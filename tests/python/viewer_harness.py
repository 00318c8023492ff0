"""Loads a snapshot pickle into a local copy of PyTorch's memory_viz page in headless
Chromium and reports what a person opening it would see.

The viewer (MemoryViz.js, process_alloc_data.js and d3 v7) is not in torch's wheel and the
page at pytorch.org needs the network, so a local copy is given by directory:
MEMHIST_MEMORY_VIZ_DIR (or --viewer DIR) must hold MemoryViz.js, process_alloc_data.js and
d3 v7 as one UMD file (d3.v7.min.js, d3.min.js or d3.js). Nothing of it is kept here: the
files are copied into a temporary folder, where the viewer's d3 imports (network URLs) are
rewritten to read the UMD bundle's global, and served with the snapshot from 127.0.0.1.
Chromium is driven through chromedriver's WebDriver HTTP interface (standard library only):
Debian's `chromium` and `chromium-driver`, or MEMHIST_CHROMIUM and MEMHIST_CHROMEDRIVER.

The page hands the snapshot to the viewer's own add_remote_files() (an ArrayBuffer of the
whole file, as a file dropped on the page), and the result is read from the page:
  errors    uncaught exceptions, unhandled promise rejections, console.error calls and the
            browser's own SEVERE log lines (a module that failed to load, a crashed tab)
  rendered  the chosen view drew: the timeline's polygons and its "Detail: N of M entries"
            label; the State History view's event list and its segment layout
  entries   M, the timeline's allocation count, where shown
  seconds   from the request to the drawing (or to the failure)
  peak_rss  the largest resident memory of one of the browser's processes (the page's
            renderer), in bytes
The viewer's console.log calls are silenced (it logs the whole snapshot object once, which
costs nothing in a browser without developer tools but makes the WebDriver connection
serialise it).

    python3 viewer_harness.py SNAPSHOT.pickle [--viewer DIR] [--view NAME] [--timeout S]
                              [--screenshot PNG]
prints the result as one JSON object; exit status 0 when rendered with no errors, 1 when
not, 77 when no viewer or browser is available.
"""
import argparse
import base64
import functools
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SKIP = 77
VIEWS = ("Active Memory Timeline", "Allocator State History")
D3_NAMES = ("d3.v7.min.js", "d3.min.js", "d3.js")
IMPORT_RE = re.compile(r'^import\s+(\*\s+as\s+\w+|\{[^}]*\})\s+from\s+"https?://[^"]*d3[^"]*";',
                       re.M)


class Unavailable(Exception):
    """No viewer copy or no browser: the caller skips."""


def viewer_dir(given=None):
    d = given or os.environ.get("MEMHIST_MEMORY_VIZ_DIR")
    if not d:
        raise Unavailable("no local memory_viz copy: set MEMHIST_MEMORY_VIZ_DIR to a folder with "
                          "MemoryViz.js, process_alloc_data.js and d3 v7 (docs/memory-viz.md)")
    missing = [n for n in ("MemoryViz.js", "process_alloc_data.js")
               if not os.path.exists(os.path.join(d, n))]
    if not any(os.path.exists(os.path.join(d, n)) for n in D3_NAMES):
        missing.append("d3 v7 (%s)" % " or ".join(D3_NAMES))
    if missing:
        raise Unavailable("%s lacks %s" % (d, ", ".join(missing)))
    return d


def browser():
    chrome = os.environ.get("MEMHIST_CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = os.environ.get("MEMHIST_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chrome or not driver:
        raise Unavailable("headless Chromium needs `chromium` and `chromedriver` (Debian: apt-get "
                          "install chromium chromium-driver; scripts/setup.sh --viewer)")
    return chrome, driver


def rewrite_imports(src):
    """The viewer's `import ... from "<d3 URL>"` lines, as reads of the UMD global."""
    def one(m):
        what = m.group(1)
        if what.startswith("*"):
            return "const %s = globalThis.d3;" % what.split()[-1]
        return "const %s = globalThis.d3;" % what
    out, n = IMPORT_RE.subn(one, src)
    if n == 0:
        raise Unavailable("MemoryViz.js has no d3 import to redirect (not the viewer?)")
    return out


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>memory_viz (local)</title><link rel="icon" href="data:,">
<script>
window.__mh = {errors: [], ready: false};
window.addEventListener('error', e => __mh.errors.push('error: ' + (e.message || e)));
window.addEventListener('unhandledrejection',
  e => __mh.errors.push('unhandled rejection: ' + (e.reason && (e.reason.stack || e.reason))));
const __err = console.error.bind(console);
console.error = (...a) => { __mh.errors.push('console.error: ' + a.map(String).join(' ')); __err(...a); };
console.log = () => {};
</script>
<script src="d3.js"></script>
</head><body>
<script type="module">
import {add_remote_files} from './MemoryViz.js';
window.__mh.ready = true;
</script>
</body></html>
"""

START = """
const view = arguments[0];
const sel = document.querySelectorAll('select')[1];
if (sel) sel.value = view;
window.__mh.t0 = performance.now();
import('./MemoryViz.js').then(m => m.add_remote_files([{name: 'snapshot', url: '/snapshot'}]));
return true;
"""

# State History: a press on the first event draws the layout before it, which replays the
# whole trace backwards from the segments (where an inconsistent file throws).
FIRST_EVENT = """
const list = [...document.querySelectorAll('div')].find(d =>
  (d.getAttribute('style') || '').includes('font-family: monospace'));
const first = list && list.firstElementChild;
if (!first) return false;
first.dispatchEvent(new MouseEvent('mousedown', {bubbles: true}));
return true;
"""

POLL = """
const mh = window.__mh;
const label = [...document.querySelectorAll('label')].map(l => l.textContent)
  .find(t => t.startsWith('Detail:')) || null;
return {ready: mh.ready, errors: mh.errors, label: label,
        polygons: document.querySelectorAll('svg polygon').length,
        events: document.querySelectorAll('pre').length,
        rects: document.querySelectorAll('svg rect').length,
        ms: performance.now() - (mh.t0 || 0)};
"""


def prepare(vdir, out):
    with open(os.path.join(vdir, "MemoryViz.js"), encoding="utf-8") as f:
        src = rewrite_imports(f.read())
    with open(os.path.join(out, "MemoryViz.js"), "w", encoding="utf-8") as f:
        f.write(src)
    shutil.copy(os.path.join(vdir, "process_alloc_data.js"), out)
    d3 = next(os.path.join(vdir, n) for n in D3_NAMES if os.path.exists(os.path.join(vdir, n)))
    shutil.copy(d3, os.path.join(out, "d3.js"))
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write(PAGE)


class Handler(http.server.SimpleHTTPRequestHandler):
    snapshot = None

    def translate_path(self, path):
        if path.split("?")[0] == "/snapshot":
            return self.snapshot
        return super().translate_path(path)

    def log_message(self, *args):
        pass


def serve(root, snapshot):
    handler = type("H", (Handler,), {"snapshot": os.path.abspath(snapshot)})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(handler, directory=root))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    """The few WebDriver calls used, over chromedriver's HTTP port."""

    def __init__(self, chrome, driver_exe, log, network_log=False):
        self.port = free_port()
        # its own process group, which the browser it starts joins: close() ends them all
        self.proc = subprocess.Popen([driver_exe, "--port=%d" % self.port], stdout=log,
                                     stderr=log, start_new_session=True)
        self.base = "http://127.0.0.1:%d" % self.port
        for _ in range(200):
            try:
                self.call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,900", "--no-first-run", "--disable-extensions"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": dict({"browser": "SEVERE"},
                                      **({"performance": "ALL"} if network_log else {})),
            "goog:chromeOptions": {"binary": chrome, "args": args}}}}
        got = self.call("POST", "/session", caps)
        self.sid = got["sessionId"]
        self.version = got.get("capabilities", {}).get("browserVersion")

    def call(self, method, path, body=None, timeout=600):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            value = json.loads(e.read() or b"{}").get("value") or {}
            raise RuntimeError(value.get("message", str(e)).splitlines()[0]) from None

    def s(self, method, path, body=None, timeout=600):
        return self.call(method, "/session/%s%s" % (self.sid, path), body, timeout)

    def script(self, src, *args, timeout=600):
        return self.s("POST", "/execute/sync", {"script": src, "args": list(args)}, timeout)

    def severe(self):
        try:
            return [e.get("message", "") for e in self.s("POST", "/se/log", {"type": "browser"},
                                                         timeout=30)
                    if e.get("level") == "SEVERE"]
        except (RuntimeError, OSError, http.client.HTTPException):
            return []

    def requests(self):
        """The URLs the page asked for since the last call (a Driver made with
        network_log: the DevTools Network.requestWillBeSent events)."""
        urls = []
        for e in self.s("POST", "/se/log", {"type": "performance"}, timeout=30) or []:
            msg = json.loads(e.get("message", "{}")).get("message", {})
            if msg.get("method") == "Network.requestWillBeSent":
                urls.append(msg.get("params", {}).get("request", {}).get("url", ""))
        return urls

    def close(self):
        try:
            self.s("DELETE", "", timeout=30)
        except (RuntimeError, OSError, http.client.HTTPException):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the driver and any browser left
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def tree_rss(root_pid):
    """Resident bytes of the largest process among root_pid and its descendants (the page's
    renderer, in practice; Linux /proc)."""
    children = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(p))
        except (OSError, ValueError, IndexError):
            continue
    most, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open("/proc/%d/statm" % pid) as f:
                most = max(most, int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError, IndexError):
            pass
    return most


def sample_rss(pid, res, stop):
    """Keeps res["peak_rss"] up to date until `stop` is set (the page's polls wait while
    the viewer works, so memory is sampled beside them)."""
    while not stop.is_set():
        res["peak_rss"] = max(res["peak_rss"], tree_rss(pid))
        stop.wait(0.2)


def rendered(view, st):
    if view == "Allocator State History":
        return st["events"] > 0 and st["rects"] > 0
    return st["label"] is not None and st["polygons"] > 0


def load(snapshot, vdir=None, view=VIEWS[0], timeout=300.0, screenshot=None):
    """Loads `snapshot` in the viewer; returns the result dict described above. With
    `screenshot`, a PNG of the page once drawn is written there."""
    vdir = viewer_dir(vdir)
    chrome, driver_exe = browser()
    tmp = tempfile.mkdtemp(prefix="mh-viewer-")
    srv = drv = None
    res = {"snapshot": snapshot, "bytes": os.path.getsize(snapshot), "view": view,
           "rendered": False, "errors": [], "entries": None, "seconds": None, "peak_rss": 0}
    try:
        prepare(vdir, tmp)
        srv = serve(tmp, snapshot)
        with open(os.path.join(tmp, "chromedriver.log"), "wb") as log:
            drv = Driver(chrome, driver_exe, log)
            res["browser"] = drv.version
            drv.s("POST", "/url", {"url": "http://127.0.0.1:%d/index.html" % srv.server_port})
            t0 = time.monotonic()
            while not drv.script("return window.__mh.ready;") and time.monotonic() - t0 < 30:
                time.sleep(0.1)
            if not drv.script("return window.__mh.ready;"):
                res["errors"] = ["the viewer module did not load"] + drv.severe()
                return res
            # the page is busy for as long as the viewer reads the file: a poll waits for it
            drv.s("POST", "/timeouts", {"script": int(timeout * 1000)})
            stop = threading.Event()
            sampler = threading.Thread(target=sample_rss, args=(drv.proc.pid, res, stop),
                                       daemon=True)
            sampler.start()
            drv.script(START, view)
            t0 = time.monotonic()
            while True:
                try:
                    st = drv.script(POLL, timeout=timeout + 30.0)
                except (RuntimeError, OSError, http.client.HTTPException) as e:
                    res["errors"].append("browser: %s" % e)  # a crashed tab, a hung page
                    break
                res["errors"] = list(st["errors"])
                res["seconds"] = round(st["ms"] / 1000.0, 2)
                if st["label"]:
                    m = re.search(r"of (\d+) entries", st["label"])
                    res["entries"] = int(m.group(1)) if m else None
                if res["errors"]:
                    break
                if rendered(view, st):
                    if view == "Allocator State History":
                        drv.script(FIRST_EVENT, timeout=timeout + 30.0)
                    time.sleep(1.0)  # let a late error surface
                    st = drv.script(POLL)
                    res["errors"] = list(st["errors"])
                    res["rendered"] = True
                    if screenshot:
                        with open(screenshot, "wb") as f:
                            f.write(base64.b64decode(drv.s("GET", "/screenshot")))
                    break
                if time.monotonic() - t0 > timeout:
                    res["errors"].append("not drawn within %.0f s" % timeout)
                    break
                time.sleep(0.25)
            stop.set()
            sampler.join()
            res["errors"] += [m for m in drv.severe() if m not in res["errors"]]
    finally:
        if drv:
            drv.close()
        if srv:
            srv.shutdown()
            srv.server_close()
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("--viewer", help="folder of the viewer copy (default $MEMHIST_MEMORY_VIZ_DIR)")
    ap.add_argument("--view", default=VIEWS[0], choices=VIEWS)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the drawing")
    ap.add_argument("--screenshot", help="PNG of the page once drawn")
    a = ap.parse_args()
    if not os.path.isfile(a.snapshot):
        print("viewer_harness.py: %s: not a file" % a.snapshot, file=sys.stderr)
        return 2
    try:
        res = load(a.snapshot, a.viewer, a.view, a.timeout, a.screenshot)
    except Unavailable as e:
        print(json.dumps({"skipped": str(e)}))
        return SKIP
    print(json.dumps(res))
    return 0 if res["rendered"] and not res["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
