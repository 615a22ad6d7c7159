#!/usr/bin/env python3
"""conv_ab.py - convert one trace with two or more alloctrace binaries,
interleaved (the order reversed every other round), RUNS rounds: wall time
of the whole process (from spawn to exit, perf_counter), printed as M
records per wall second, median (min-max) and the first quartile.  For
A/B checks of convert's speed on one trace at a time, where
bench/replay/convspeed.sh's CPU figures and output checks are not needed.

  bench/replay/conv_ab.py TRACE RUNS BIN...
  e.g. bench/replay/conv_ab.py /tmp/rpconvspeed/t10000 40 OLD/alloctrace NEW/alloctrace

The record count comes from the first binary's `info --json` (the busiest
process).  Holds /tmp/alloctrace-bench.lock while it times.
"""
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    trace, runs, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    info = json.loads(subprocess.run([bins[0], "info", "--json", trace], check=True,
                                     capture_output=True, text=True).stdout)
    recs = max(p["records"] for p in info["processes"])
    out = "/tmp/conv_ab.%d.wl" % os.getpid()
    res = {b: [] for b in bins}
    with open("/tmp/alloctrace-bench.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for i in range(runs):
            for b in (bins if i % 2 == 0 else bins[::-1]):
                t0 = time.perf_counter()
                subprocess.run([b, "convert", trace, "-o", out, "--quiet", "--no-progress"],
                               check=True)
                res[b].append(time.perf_counter() - t0)
    os.unlink(out)
    for b in bins:
        w = sorted(res[b])
        print("%-40s %s: %.1f M rec/s (%.1f-%.1f), first quartile %.1f, %d runs" %
              (b, os.path.basename(trace.rstrip("/")), recs / statistics.median(w) / 1e6,
               recs / w[-1] / 1e6, recs / w[0] / 1e6, recs / w[len(w) * 3 // 4] / 1e6, len(w)))


if __name__ == "__main__":
    main()
