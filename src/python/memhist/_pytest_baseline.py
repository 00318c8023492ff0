"""memhist._pytest_baseline - each test's peaks kept between runs
(--memhist-baseline DIR).

One JSON file per test, DIR/<name>.json, keyed inside by the test's node id
(the name is the node id made safe for a file name, with a hash of it):
schema, node id, device, peak allocated and reserved in bytes with their
steps, and the recording the peaks came from, copied beside it as
DIR/<name>.memhist so that `memhist diff` can name what grew. Keys are
sorted and the figures are integers: the virtual device is deterministic,
so a second run writes the same file and a version-control diff shows only
real changes. One file per test keeps runs with pytest-xdist (workers
writing at once) and selections (-k) from touching other tests' entries.
"""
import hashlib
import json
import os
import re
import shutil

SCHEMA = 1


def file_name(nodeid):
    """A file name for a test: readable, unique per node id."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[-100:]
    return "%s-%s" % (safe, hashlib.sha1(nodeid.encode()).hexdigest()[:8])


class Store:
    def __init__(self, directory):
        self.dir = os.path.abspath(directory)

    def paths(self, nodeid):
        base = os.path.join(self.dir, file_name(nodeid))
        return base + ".json", base + ".memhist"

    def load(self, nodeid):
        """The test's stored entry, or None; ValueError when it is not one."""
        path = self.paths(nodeid)[0]
        try:
            with open(path) as f:
                entry = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise ValueError("%s: not a memhist baseline: %s" % (path, e)) from None
        if not isinstance(entry, dict) or entry.get("schema") != SCHEMA or entry.get("nodeid") != nodeid:
            raise ValueError("%s: not a memhist baseline of %s (schema %d)" % (path, nodeid, SCHEMA))
        return entry

    def save(self, nodeid, device, recording):
        """Stores a test's peaks (from the report's device) and its recording."""
        os.makedirs(self.dir, exist_ok=True)
        json_path, rec_path = self.paths(nodeid)
        shutil.copyfile(recording, rec_path)
        entry = {"schema": SCHEMA, "nodeid": nodeid, "device": device["device"],
                 "peak_allocated": device["peak_allocated"], "peak_reserved": device["peak_reserved"],
                 "peak_allocated_step": device["peak_allocated_step"],
                 "peak_reserved_step": device["peak_reserved_step"],
                 "recording": os.path.basename(rec_path)}
        tmp = json_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(entry, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, json_path)

    def recording(self, entry):
        path = os.path.join(self.dir, entry.get("recording", ""))
        return path if entry.get("recording") and os.path.isfile(path) else None


def grew(entry, device, tolerance):
    """[(what, before, now)] for each peak that grew past the tolerance."""
    out = []
    for what in ("allocated", "reserved"):
        before, now = entry["peak_" + what], device["peak_" + what]
        if now > before + tolerance:
            out.append((what, before, now))
    return out
