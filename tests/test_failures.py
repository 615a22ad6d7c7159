#!/usr/bin/env python3
"""test_failures.py - the program must survive when the trace cannot be
written, and the trace must say so.

  unwritable  ALLOCTRACE_FILE in a directory that does not exist: the
              program runs to the end with its normal output, stderr names
              the file and the reason.
  fsize       RLIMIT_FSIZE lets the trace grow to 256 KiB only (as a full
              disk would): the program still runs to the end (no SIGXFSZ),
              stderr says the trace was cut short, the header says
              TRUNCATED with EFBIG, lost records are counted and the part
              that was written reads back.

usage: test_failures.py [--build DIR] CASE...   (or --list; tests/atr_runner.py)
"""
import json
import os
import re
import resource
import subprocess
import sys

import atr_runner
from atr_runner import fail

PROG = ["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3", "-c",
        "d = {}\nfor i in range(100000):\n    d[i] = str(i) * 200\n    if i % 3 == 0: del d[i]\nprint(len(d))"]


def run(env_extra, preexec=None):
    env = dict(os.environ, **env_extra)
    return subprocess.run(PROG, env=env, capture_output=True, text=True, timeout=60,
                          preexec_fn=preexec)


def case_unwritable(c):
    base = run({})
    r = run({"LD_PRELOAD": c.lib, "ALLOCTRACE_FILE": "/nonexistent-dir/x.atr"})
    if r.returncode != 0 or r.stdout != base.stdout:
        fail("program changed: rc=%d out=%r err=%r" % (r.returncode, r.stdout, r.stderr))
    if "/nonexistent-dir/x.atr" not in r.stderr or "ENOENT" not in r.stderr:
        fail("stderr does not say why: %r" % r.stderr)
    return "stderr: " + r.stderr.strip()


def case_fsize(c):
    base = run({})
    path = os.path.join(c.tmp, "t.atr")
    limit = 256 << 10

    def lim():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = run({"LD_PRELOAD": c.lib, "ALLOCTRACE_FILE": path, "ALLOCTRACE_BUFFER_KB": "16"}, lim)
    if r.returncode != 0 or r.stdout != base.stdout:
        fail("program changed: rc=%d out=%r err=%r" % (r.returncode, r.stdout, r.stderr))
    if "cut short" not in r.stderr or "EFBIG" not in r.stderr:
        fail("stderr does not say the trace was cut short: %r" % r.stderr)
    if os.path.getsize(path) > limit:
        fail("trace larger than the limit")
    info = c.run(["info", path, "--json"], timeout=60)
    p = json.loads(info.stdout)
    p = p["processes"][0] if isinstance(p, dict) else p[0]
    if not p.get("truncated"):
        fail("header does not say truncated: %s" % info.stdout[:400])
    if p["lost_records"] <= 0:
        fail("no lost records counted")
    total = sum(p["calls"].values())
    if total < 1000:
        fail("too little of the trace reads back: %d calls" % total)
    return "%d calls kept, %d lost; stderr: %s" % (total, p["lost_records"], r.stderr.strip())


def case_churn(c):
    """1000 short threads in waves of 20: exact mallocs, every thread
    seen, nothing lost, and the file stays small because exited threads'
    staging blocks are reused."""
    out = os.path.join(c.tmp, "trace")
    r = c.run(["record", "-o", out, "--", c.prog("churn")], ok=False)
    if r.returncode != 0:
        fail("churn failed: %s" % r.stderr)
    want = json.loads(r.stdout)
    info = c.run(["info", out, "--json"], ok=False, timeout=60)
    p = json.loads(info.stdout)["processes"][0]
    if p["calls"]["malloc"] != want["malloc"]:
        fail("malloc %d, program made %d" % (p["calls"]["malloc"], want["malloc"]))
    if p["calls"]["free"] < want["free_own"]:
        fail("free %d < program's own %d" % (p["calls"]["free"], want["free_own"]))
    if p["threads"] != want["threads"]:
        fail("threads %d, program had %d" % (p["threads"], want["threads"]))
    if p["lost_records"] or p["unknown_frees"]:
        fail("lost %d unknown frees %d" % (p["lost_records"], p["unknown_frees"]))
    # disk use, not apparent size: DATA blocks are written with their
    # used bytes only and the rest stays a hole.  1001 threads: without
    # reuse each would reserve a 256 KiB staging block (> 250 MB).
    size = sum(os.stat(os.path.join(out, f)).st_blocks * 512 for f in os.listdir(out))
    if size > 64 << 20:
        fail("trace uses %d bytes of disk: staging blocks not reused" % size)
    return "%d threads, %d calls, %d bytes" % (p["threads"], sum(p["calls"].values()), size)


def case_write_behind(c):
    """record --write-behind 1: while the program runs, all but the newest
    MiB of its trace file is written to disk and dropped from the page
    cache (util_wbehind.c); the trace is the same: exact counts.  churn's
    raw staging blocks make a ~100 MB file in ~0.2 s, so the thread that
    looks every 10 ms has plenty to do.  --write-behind 0 does nothing."""
    env = dict(os.environ, ALLOCTRACE_COMPACT_NOTE_BYTES="1")
    notes = []
    for mib in ("1", "0"):
        out = os.path.join(c.tmp, "trace" + mib)
        r = c.run(["record", "--write-behind", mib, "-o", out, "--", c.prog("churn"), "20", "20"],
                  ok=False, env=env)
        if r.returncode != 0:
            fail("churn failed: %s" % r.stderr)
        want = json.loads(r.stdout)
        m = re.search(r"([0-9.]+ [KMG]?i?B) of trace written to disk while the program ran", r.stderr)
        if mib == "1" and not m:
            fail("no write-behind note: %s" % r.stderr)
        if mib == "0" and m:
            fail("--write-behind 0 wrote behind: %s" % r.stderr)
        notes.append(m.group(1) if m else "none")
        p = json.loads(c.run(["info", out, "--json"], timeout=60).stdout)["processes"][0]
        if p["calls"]["malloc"] != want["malloc"] or p["threads"] != want["threads"]:
            fail("malloc %d threads %d, program made %d in %d" % (
                p["calls"]["malloc"], p["threads"], want["malloc"], want["threads"]))
        if p["calls"]["free"] < want["free_own"]:
            fail("free %d < program's own %d" % (p["calls"]["free"], want["free_own"]))
        if p["lost_records"] or p["unknown_frees"]:
            fail("lost %d unknown frees %d" % (p["lost_records"], p["unknown_frees"]))
    return "written behind: %s with 1 MiB, %s with 0" % tuple(notes)


CASES = {"unwritable": case_unwritable, "fsize": case_fsize, "churn": case_churn,
         "write_behind": case_write_behind}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, tmp_prefix="atr-failures-"))
