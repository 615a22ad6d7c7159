#!/usr/bin/env python3
"""load_bench.py - `alloctrace load` at scale: a 1e8-call mallocbench trace
(recorded with --stacks) into a clickhouse-server on loopback; load rate,
bytes on disk per call, and the times of the leak and hot-path queries of
docs/CLICKHOUSE.md (3 runs each: median, min-max).

usage: load_bench.py --build DIR [--work DIR] [--iters N] [--keep]
Needs ~6 GB of disk in --work (default /tmp/chbench); deletes it after
unless --keep.  Every timed step runs under flock /tmp/alloctrace-bench.lock.
"""

import argparse
import fcntl
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "clickhouse"))
import chserver  # noqa: E402

LOCK = "/tmp/alloctrace-bench.lock"


def sh(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def timed(cmd, env=None):
    """cmd's wall time with the bench lock held (the wait is not counted)."""
    with open(LOCK, "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        t0 = time.monotonic()
        r = sh(cmd, env=env)
        return time.monotonic() - t0, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default="/tmp/chbench")
    ap.add_argument("--iters", type=int, default=26000000)  # x2 threads x ~1.94 calls
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    at = os.path.join(os.path.abspath(a.build), "alloctrace")
    os.makedirs(a.work, exist_ok=True)
    mb = os.path.join(a.work, "mallocbench")
    sh(["gcc", "-O2", "-pthread", "-o", mb, os.path.join(SRC, "bench", "mallocbench.c")])
    trace = os.path.join(a.work, "big")
    if not os.path.isdir(trace):
        sh([at, "record", "-o", trace, "--stacks", "--", mb, "2", str(a.iters)])
    tsize = sum(os.path.getsize(os.path.join(trace, f)) for f in os.listdir(trace))
    with open(os.path.join(SRC, "docs", "CLICKHOUSE.md")) as f:
        doc = f.read()
    q = dict(re.findall(r"<!-- query: (\w+) -->.*?```sql\n(.*?)```", doc, re.S))
    srv = chserver.Server("bench", dir=os.path.join(a.work, "server"))
    srv.start()
    env = dict(os.environ, ALLOCTRACE_NO_PROGRESS="1")
    try:
        secs, r = timed([at, "load", trace, "--clickhouse", srv.url], env=env)
        print(r.stdout.strip())
        m = re.search(r"(\d+) calls, (\d+) rows \((\d+) events\)", r.stdout)
        calls, rows, events = int(m.group(1)), int(m.group(2)), int(m.group(3))
        parts = srv.rows("SELECT table, sum(rows), sum(bytes_on_disk), "
                         "sum(data_uncompressed_bytes) FROM system.parts WHERE database = "
                         "'alloctrace' AND active GROUP BY table ORDER BY table")
        disk = sum(int(p[2]) for p in parts)
        ev = [p for p in parts if p[0] == "events"][0]
        res = {}
        for name in ("leaks", "hot_by_calls", "peak", "threads", "stack_stats"):
            ts = []
            for _ in range(a.runs):
                t, _r = timed(["curl", "-sS", "--fail", srv.url, "--data-binary", q[name]])
                ts.append(t)
            res[name] = ts
        secs_none, r2 = timed([at, "load", trace, "--clickhouse", srv.url, "--database", "agg",
                               "--events", "none"], env=env)
    finally:
        srv.stop(keep_dir=a.keep)
    print("\n## results (machine: %s; load average at the end: %s)" % (
        os.uname().nodename, open("/proc/loadavg").read().split()[:3]))
    print("trace: %d calls, %d records, %.2f GB on disk (%.2f B/call)" % (
        calls, events, tsize / 1e9, tsize / calls))
    print("load --events all: %.1f s, %.0f rows/s (%d rows, %d events)" % (
        secs, rows / secs, rows, events))
    print("ClickHouse on disk: events %.2f GB = %.2f B/call (uncompressed %.1f B/row); "
          "all tables %.2f GB = %.2f B/call" % (int(ev[2]) / 1e9, int(ev[2]) / calls,
                                                 int(ev[3]) / int(ev[1]), disk / 1e9,
                                                 disk / calls))
    for name, ts in res.items():
        print("query %-13s median %.2f s (%.2f-%.2f)" % (name, statistics.median(ts), min(ts),
                                                       max(ts)))
    print("load --events none: %.1f s" % secs_none)
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    main()
