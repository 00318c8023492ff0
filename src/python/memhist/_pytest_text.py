"""memhist._pytest_text - the pytest plugin's words: failure texts, the
session summary line, byte counts.

Everything here is presentation. The figures come from memhist's analyses
(`memhist report --json` and the others, run by memhist._pytest_measure);
the groups live at the peak, the growing sites and what grew against a
baseline are the text `memhist report`, `memhist layers`, `memhist growth`
and `memhist diff` print, quoted as they print it. Plain text (no colours):
it goes into terminals, logs and JUnit XML alike.
"""


def bytes_text(n):
    """A byte count as memhist prints it (src/model/units.c): "1.50 GiB"."""
    value, unit = float(n), 0
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    while value >= 1024.0 and unit < 4:
        value /= 1024.0
        unit += 1
    return "%d B" % n if unit == 0 else "%.2f %s" % (value, units[unit])


def section(text, starts):
    """The lines of `text` from the first line starting with `starts` to the
    next blank line."""
    lines, out = text.splitlines(), []
    for line in lines:
        if out and not line.strip():
            break
        if out or line.startswith(starts):
            out.append(line)
    return out


def indent(lines, by="  "):
    return [by + line for line in lines]


def peak_moment(device, which):
    """ "step 3, backward": when a peak was set, as the report's JSON says."""
    step = device["peak_%s_step" % which]
    phase = device.get("peak_%s_phase" % which)
    text = "before the first step" if step < 0 else "step %d" % step
    return text + (", %s" % phase if phase else "")


def budget_failure(over, device, report_text, layers_text):
    """Text of a test over its budget. over: [(what, peak, budget)] where
    what is "allocated" or "reserved"."""
    lines = []
    for what, peak, budget in over:
        lines.append("GPU memory budget exceeded on device %d (%s): peak %s %s > max_%s %s (by %s), "
                     "at %s" % (device["device"], device.get("name", ""), what, bytes_text(peak), what,
                                bytes_text(budget), bytes_text(peak - budget), peak_moment(device, what)))
    groups = section(report_text, "  live at the allocated peak:")
    if groups:
        lines += ["", "by stack (memhist report):"] + indent(groups, "")
    layers = section(layers_text, "  layer ")
    if layers:
        lines += ["", "by module (memhist layers):"] + layers
    return lines


def growth_failure(device, growth_text):
    """Text of a no_growth test whose memory grew step after step."""
    entries = device["growth"]["entries"]
    lines = ["GPU memory grows step after step on device %d: %d site%s kept %s more live at the end "
             "of each step (memhist growth):" % (
                 device["device"], len(entries), "" if len(entries) == 1 else "s",
                 bytes_text(sum(e["bytes_per_step"] for e in entries)))]
    return lines + [line for line in growth_text.splitlines() if line.strip()]


def baseline_failure(grew, tolerance, baseline_path, diff_text):
    """Text of a test whose peaks grew past its baseline's. grew: [(what,
    before, now)]."""
    lines = ["GPU memory grew against the baseline %s (tolerance %s):" % (baseline_path,
                                                                          bytes_text(tolerance))]
    for what, before, now in grew:
        lines.append("  peak %s %s -> %s (+%s)" % (what, bytes_text(before), bytes_text(now),
                                                   bytes_text(now - before)))
    if diff_text:
        lines += ["", "what changed (memhist diff, A = baseline, B = this run):"]
        lines += [line for line in diff_text.splitlines() if line.strip()]
    return lines


def summary(measured, budgets, growth_checks, baselines, largest, failed):
    """The session's one summary line."""
    text = "memhist: %d test%s measured" % (measured, "" if measured == 1 else "s")
    text += ", %d budget%s checked" % (budgets, "" if budgets == 1 else "s")
    if growth_checks:
        text += ", %d growth check%s" % (growth_checks, "" if growth_checks == 1 else "s")
    if baselines:
        text += ", %d baseline%s compared" % (baselines, "" if baselines == 1 else "s")
    if failed:
        text += ", %d failed a memory check" % failed
    if largest:
        text += "; largest peak %s allocated (%s reserved) in %s" % (
            bytes_text(largest[0]), bytes_text(largest[1]), largest[2])
    return text
