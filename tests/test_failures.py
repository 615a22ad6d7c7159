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

usage: test_failures.py --build DIR CASE
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

PROG = ["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3", "-c",
        "d = {}\nfor i in range(100000):\n    d[i] = str(i) * 200\n    if i % 3 == 0: del d[i]\nprint(len(d))"]


def run(env_extra, preexec=None):
    env = dict(os.environ, **env_extra)
    return subprocess.run(PROG, env=env, capture_output=True, text=True, timeout=60,
                          preexec_fn=preexec)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def case_unwritable(build):
    lib = os.path.join(build, "liballoctrace.so")
    base = run({})
    r = run({"LD_PRELOAD": lib, "ALLOCTRACE_FILE": "/nonexistent-dir/x.atr"})
    if r.returncode != 0 or r.stdout != base.stdout:
        fail("program changed: rc=%d out=%r err=%r" % (r.returncode, r.stdout, r.stderr))
    if "/nonexistent-dir/x.atr" not in r.stderr or "ENOENT" not in r.stderr:
        fail("stderr does not say why: %r" % r.stderr)
    print("ok: unwritable:", r.stderr.strip())


def case_fsize(build):
    lib = os.path.join(build, "liballoctrace.so")
    base = run({})
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.atr")
        limit = 256 << 10

        def lim():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        r = run({"LD_PRELOAD": lib, "ALLOCTRACE_FILE": path, "ALLOCTRACE_BUFFER_KB": "16"}, lim)
        if r.returncode != 0 or r.stdout != base.stdout:
            fail("program changed: rc=%d out=%r err=%r" % (r.returncode, r.stdout, r.stderr))
        if "cut short" not in r.stderr or "EFBIG" not in r.stderr:
            fail("stderr does not say the trace was cut short: %r" % r.stderr)
        if os.path.getsize(path) > limit:
            fail("trace larger than the limit")
        info = subprocess.run([os.path.join(build, "alloctrace"), "info", path, "--json"],
                              capture_output=True, text=True, timeout=60)
        if info.returncode != 0:
            fail("info failed: " + info.stderr)
        p = json.loads(info.stdout)
        p = p["processes"][0] if isinstance(p, dict) else p[0]
        if not p.get("truncated"):
            fail("header does not say truncated: %s" % info.stdout[:400])
        if p["lost_records"] <= 0:
            fail("no lost records counted")
        total = sum(p["calls"].values())
        if total < 1000:
            fail("too little of the trace reads back: %d calls" % total)
        print("ok: fsize: %d calls kept, %d lost; stderr: %s" %
              (total, p["lost_records"], r.stderr.strip()))


def case_churn(build):
    """1000 short threads in waves of 20: exact mallocs, every thread
    seen, nothing lost, and the file stays small because exited threads'
    staging blocks are reused."""
    import shutil
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "trace")
        prog = os.path.join(build, "tests", "progs", "churn")
        r = subprocess.run([os.path.join(build, "alloctrace"), "record", "-o", out, "--", prog],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail("churn failed: %s" % r.stderr)
        want = json.loads(r.stdout)
        info = subprocess.run([os.path.join(build, "alloctrace"), "info", out, "--json"],
                              capture_output=True, text=True, timeout=60)
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
        print("ok: churn: %d threads, %d calls, %d bytes" %
              (p["threads"], sum(p["calls"].values()), size))
    finally:
        shutil.rmtree(d)


CASES = ["unwritable", "fsize", "churn"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--list", action="store_true", help="print the case names (CMake adds one test each)")
    ap.add_argument("case", nargs="?", choices=CASES)
    a = ap.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    if not a.build or not a.case:
        ap.error("--build and a case are required")
    globals()["case_" + a.case](os.path.abspath(a.build))


if __name__ == "__main__":
    main()
