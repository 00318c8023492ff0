"""The answers end to end through the CLI on simulated runs with known causes:
an OOM that is pure fragmentation (expandable segments, checked by what-if,
removes it), one that is true exhaustion (no setting helps), `layers` naming
the transformer blocks, `diff` of two runs differing in one layer, several
files as ranks, and usage errors."""
import json
import os
import subprocess
import sys
import tempfile

root = os.environ.get("MH_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
memhist = os.environ.get("MEMHIST") or os.path.join(root, "build", "memhist")
failures = []


def run(*args, check=True):
    p = subprocess.run([memhist] + list(args), capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise RuntimeError("memhist %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def simulate(out, *args):
    run("simulate", "-o", out, *args)
    return out


def oom_case(path):
    doc = json.loads(run("oom", "--json", path).stdout)
    cases = doc["files"][0]["cases"]
    expect(len(cases) == 1, "%s: one OOM case, got %d" % (path, len(cases)))
    return cases[0]


def test_fragmentation(tmp):
    # The default GPT run fragments its cache: it needs 11.1 GiB allocated but
    # reserves up to 19 GiB; on a 12 GiB device it fails with enough free memory.
    c = oom_case(simulate(os.path.join(tmp, "frag.memhist"), "--device-memory", "12GiB"))
    expect(c["verdict"] == "fragmentation", "fragmentation verdict, got %s" % c["verdict"])
    expect(c["allocated"] + c["request"] <= c["reserved"] + c["device_free"],
           "fragmentation: the request fits in what the allocator could use")
    expect(c["largest_free_same_stream"] < c["request"], "no block large enough")
    exp = [s for s in c["suggestions"] if s["setting"].startswith("expandable_segments")]
    expect(exp and exp[0]["checked"] and not exp[0]["oom"],
           "expandable_segments:True removes the OOM in the what-if")
    expect(c["live_by_layer"] and c["live_by_stack"], "live memory listed by layer and stack")


def test_exhaustion(tmp):
    c = oom_case(simulate(os.path.join(tmp, "exh.memhist"), "--device-memory", "8GiB"))
    expect(c["verdict"] == "exhaustion", "exhaustion verdict, got %s" % c["verdict"])
    expect(all(s["checked"] and s["oom"] for s in c["suggestions"]),
           "no allocator setting removes a true exhaustion")


def test_layers_and_diff(tmp):
    params = "layers=4,hidden=512,heads=8,seq=512,batch=4,vocab=8000,seqvar=0"
    a = simulate(os.path.join(tmp, "a.memhist"), "--param", params, "--steps", "3")
    b = simulate(os.path.join(tmp, "b.memhist"), "--param", params + ",checkpoint=4", "--steps", "3")
    doc = json.loads(run("layers", "--json", a).stdout)
    dev = doc["files"][0]["devices"][0]
    names = [l["layer"] for l in dev["layers"]]
    for i in range(4):
        expect("transformer.h.%d" % i in names, "layer transformer.h.%d listed" % i)
    expect(len(dev["plan"]["layers"]) >= 1, "a checkpointing plan")
    expect(dev["by_category"]["parameter"] > 0 and dev["by_category"]["activation"] > 0,
           "categories at the peak")
    d = json.loads(run("diff", "--json", a, b).stdout)
    expect(d["layers"][0]["layer"] == "transformer.h.2" and d["layers"][0]["delta"] < 0,
           "diff: the checkpointed block shrank most, got %s" % d["layers"][0])
    expect(d["peak_allocated"]["delta"] < 0, "diff: peak allocated went down")
    text = run("report", a, b).stdout
    expect("worst rank by peak reserved: " + a in text, "report names the worst rank")
    expect("trend:" in text and "by category at the allocated peak" in text,
           "report shows categories and the fragmentation trend")
    same = run("report", a, a).stdout
    expect("spread of peak reserved: none (every rank " in same and "max/min" not in same,
           "ranks with equal peaks have no spread, got %s" % same[-600:])


def test_errors(tmp):
    p = run("oom", check=False)
    expect(p.returncode == 2 and "missing FILE" in p.stderr, "oom without a file is a usage error")
    p = run("diff", "only-one.memhist", check=False)
    expect(p.returncode == 2, "diff needs two files")
    p = run("layers", os.path.join(tmp, "does-not-exist.memhist"), check=False)
    expect(p.returncode == 1 and "does-not-exist.memhist" in p.stderr,
           "a missing file is a failure naming the file")
    junk = os.path.join(tmp, "junk.memhist")
    with open(junk, "wb") as f:
        f.write(b"not a memhist file at all")
    p = run("oom", junk, check=False)
    expect(p.returncode == 1 and "junk.memhist" in p.stderr, "a bad file is a clean failure")


def main():
    if not os.path.exists(memhist):
        print("skip: memhist binary not found at", memhist)
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for t in (test_fragmentation, test_exhaustion, test_layers_and_diff, test_errors):
            t(tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
