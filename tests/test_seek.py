#!/usr/bin/env python3
"""test_seek.py - dump --thread/--from/--to use the v2 index (frame headers:
thread, first/last timestamp, record count) to skip frames, and give
exactly the records a full dump has for that thread and time window.

  thread   dump --thread T<serial> equals the full dump's lines of that
           thread; most frames are skipped, none of that thread's.
  window   dump --from A --to B equals the full dump's records with A <= t <= B
           (stamps compared in ns; a record within 1 us of an edge may fall
           either way: the window is converted to ticks); frames outside
           are skipped.
  both     thread and window together; v1 traces (no index) give the same
           records without skipping.

usage: test_seek.py [--build DIR] CASE...   (or --list; tests/atr_runner.py)
"""
import json
import os
import re
import sys

import atr_runner
from atr_runner import fail


def record(c):
    d = os.path.join(c.tmp, "t")
    c.run(["record", "--buffer-kb", "4", "-o", d, "--", c.prog("churn"), "20", "6"])
    return d


def records(out):
    """dump --json lines without seq (it counts selected records only)"""
    res = []
    for line in out.splitlines():
        o = json.loads(line)
        o.pop("seq")
        res.append(o)
    return res


def stats(err):
    m = re.search(r"(\d+) block\(s\) decoded, (\d+) left unread", err)
    if not m:
        fail("no --seek-stats line:\n" + err)
    return int(m.group(1)), int(m.group(2))


def check(c, d, sel, keep, want_skip=True):
    full = records(c.run(["dump", "--json", d]).stdout)
    r = c.run(["dump", "--json", "--seek-stats"] + sel + [d])
    got = records(r.stdout)
    decoded, skipped = stats(r.stderr)
    want = [o for o in full if keep(o) is True]
    maybe = [o for o in full if keep(o) is None]
    extra = [o for o in got if o not in want and o not in maybe]
    missing = [o for o in want if o not in got]
    if extra or missing:
        fail("%s: %d records too many (%s), %d missing (%s)" %
             (sel, len(extra), extra[:2], len(missing), missing[:2]))
    if not got:
        fail("%s selected nothing: a useless test" % sel)
    if want_skip and skipped < decoded:
        fail("%s: only %d block(s) skipped, %d decoded" % (sel, skipped, decoded))
    if not want_skip and decoded == 0:
        fail("%s: nothing decoded in a trace without an index" % sel)
    print("%s: %d records, %d blocks decoded, %d skipped" % (sel, len(got), decoded, skipped))


def window(a, b):
    def keep(o):
        t = o["ts_ns"]
        if a * 1e9 + 1000 <= t <= b * 1e9 - 1000:
            return True
        if a * 1e9 - 1000 <= t <= b * 1e9 + 1000:
            return None
        return False
    return keep


def span(c, d):
    full = records(c.run(["dump", "--json", d]).stdout)
    return full[0]["ts_ns"] / 1e9, full[-1]["ts_ns"] / 1e9


def quantiles(c, d, qa, qb):
    """the times of the records at fractions qa and qb of the trace, by count:
    a window of the time span can fall into a pause of a loaded machine"""
    ts = sorted(o["ts_ns"] for o in records(c.run(["dump", "--json", d]).stdout))
    return ts[int(len(ts) * qa)] / 1e9, ts[int(len(ts) * qb)] / 1e9


def case_thread(c):
    d = record(c)
    check(c, d, ["--thread", "T3"], lambda o: o["thread"] == 3)


def case_window(c):
    d = record(c)
    a, b = quantiles(c, d, 0.4, 0.5)
    check(c, d, ["--from", "%.9f" % a, "--to", "%.9f" % b], window(a, b))


def case_both(c):
    d = record(c)
    a, b = quantiles(c, d, 0.1, 0.9)
    w = window(a, b)

    def keep(o):
        return w(o) if o["thread"] == 1 else False
    check(c, d, ["--thread", "T1", "--from", "%.9f" % a, "--to", "%.9f" % b], keep)
    # a version-1 trace (the recorder before v2): no index, same answers
    v1 = os.path.join(c.tmp, "v1.atr")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz", "corpus",
                           "real-v1-calls"), "rb") as src, open(v1, "wb") as dst:
        dst.write(src.read())
    t0, t1 = span(c, v1)
    a, b = t0 + (t1 - t0) * 0.2, t0 + (t1 - t0) * 0.6
    check(c, v1, ["--thread", "T1", "--from", "%.9f" % a, "--to", "%.9f" % b], window(a, b),
          want_skip=False)


CASES = {"thread": case_thread, "window": case_window, "both": case_both}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, tmp_prefix="atr-seek-"))
