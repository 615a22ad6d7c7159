#!/usr/bin/env python3
"""Every allocator under test makes every call (issue 12, item 4).

tests/progs/bigcalls (4 threads, every call kind on 100000-109999-byte
blocks, half freed by another thread) is recorded and converted; then the
replay of that workload is itself recorded with liballoctrace, as a user
who trusts nothing would, under glibc, jemalloc, tcmalloc, mimalloc and
glibc with arena_max=1 and with mmap_threshold=65536.  In each recorded
replay, the calls on blocks of those sizes must equal the program's: per
type (the aligned family summed: an allocator lacking memalign has it
emulated with posix_memalign), and every such block freed as often.

usage: test_allocators.py --build BUILD_DIR [SPEC ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from atr_runner import sanitized

SPECS = ["glibc", "jemalloc", "tcmalloc", "mimalloc",
         "glibc+glibc.malloc.arena_max=1", "glibc+glibc.malloc.mmap_threshold=65536",
         "glibc+--membarrier"]  # a "+--flag" is a replay option, not a tunable
ALLOCS = {"malloc", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
          "aligned_alloc", "valloc", "pvalloc"}
ALIGNED = {"memalign", "posix_memalign", "aligned_alloc", "valloc", "pvalloc"}
LO, HI = 100000, 110000


def counts(tool, atr):
    """Calls on in-range blocks in one trace file, by type."""
    out = subprocess.run([tool, "dump", "--json", atr], check=True, capture_output=True,
                         text=True).stdout
    # live: address -> count, not a set: when threads reuse an address at
    # once, the trace may show the new block before the old one's free
    live, c = {}, {}
    for line in out.splitlines():
        r = json.loads(line)
        t = r.get("type")
        p = r.get("ptr", "0x0")
        if (t == "free" or t in ("realloc", "reallocarray")) and live.get(p, 0) > 0:
            live[p] -= 1
            key = "free" if t == "free" else t + "_src"
            c[key] = c.get(key, 0) + 1
        if t in ALLOCS and LO <= r.get("size", 0) < HI and r.get("ret", "0x0") != "0x0":
            key = "aligned" if t in ALIGNED else t
            c[key] = c.get(key, 0) + 1
            live[r["ret"]] = live.get(r["ret"], 0) + 1
    return c


def trace_counts(tool, d):
    """The trace file of d (a record -o directory) with the most such calls."""
    best = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".atr"):
            c = counts(tool, os.path.join(d, f))
            if sum(c.values()) > sum(best.values()):
                best = c
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("specs", nargs="*")
    a = ap.parse_args()
    tool = os.path.join(a.build, "alloctrace")
    prog = os.path.join(a.build, "tests", "progs", "bigcalls")
    if sanitized(a.build):
        print("skipped: an ASan build runs under no other allocator, nor under liballoctrace")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tool, "record", "-o", f"{tmp}/prog", "--", prog, "200"], check=True,
                       capture_output=True)
        want = trace_counts(tool, f"{tmp}/prog")
        assert want.get("malloc", 0) >= 800 and want.get("free", 0) >= 800, want
        assert want.get("aligned", 0) and want.get("calloc", 0) and want.get("realloc", 0), want
        subprocess.run([tool, "convert", "--no-progress", "-q", f"{tmp}/prog", "-o", f"{tmp}/wl"],
                       check=True)
        bad = 0
        for spec in a.specs or SPECS:
            name, *tun = spec.split("+")
            cmd = [tool, "record", "-o", f"{tmp}/{len(os.listdir(tmp))}", "--", tool, "replay",
                   f"{tmp}/wl", "--allocator", name, "--timing", "off", "--think", "off", "--json"]
            for t in tun:
                cmd += [t] if t.startswith("--") else ["--tunable", t]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{spec}: replay failed: {p.stderr.strip()}")
                bad += 1
                continue
            rep = json.loads(p.stdout[p.stdout.index("{"):])
            got = trace_counts(tool, cmd[3])
            ok = got == want and rep["unexpected_failure"] == 0
            print(f"{spec}: {'ok' if ok else 'MISMATCH'}: recorded replay {got}, program {want}")
            bad += not ok
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
