#!/usr/bin/env python3
"""encode_later.py - deferred encoding (ALLOCTRACE_ENCODE=later, `record
--encode later`) against encoding in the thread (=thread): the trace's
bytes on disk when the program ends (what the run left: raw blocks, or
frames plus staging blocks), then what the compaction `record` runs after
the program (atr_compact() at level LEVEL, bench/compactcost.c) makes of
them and what it costs (user+sys CPU, max RSS of the compacting process).
Calls are counted by `alloctrace info --json` before and after (they must
be equal).  Sizes are exact; CPU times are noisy on a shared machine.

usage: bench/encode_later.py --build BUILD [--level 9] [--pyn N]
                             [--mixed N] [--xfree N] [--rounds R] [--out FILE]
"""
import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_util import PYJSON, finish, sh  # noqa: E402


def calls_of(atr, d):
    r = sh([atr, "info", "--json", d], env=dict(os.environ, ALLOCTRACE_NO_PROGRESS="1"))
    return sum(p["total_calls"] for p in json.loads(r.stdout)["processes"])


def disk(d):
    files = glob.glob(os.path.join(d, "*.atr"))
    return (sum(os.path.getsize(f) for f in files),
            sum(os.stat(f).st_blocks * 512 for f in files))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--level", type=int, default=9)
    ap.add_argument("--pyn", type=int, default=100000, help="python3 JSON script size")
    ap.add_argument("--mixed", type=int, default=2000000, help="mixedbench 1 thread calls")
    ap.add_argument("--xfree", type=int, default=250000, help="xfreebench 4 pairs, per thread")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    atr = os.path.join(build, "alloctrace")
    lib = os.path.join(build, "liballoctrace.so")
    src = os.path.dirname(HERE)
    work = tempfile.mkdtemp(prefix="alloctrace-later.")
    out = []
    p = out.append
    cc = os.environ.get("CC", "gcc")
    for prog in ("mixedbench", "xfreebench"):
        sh([cc, "-O2", "-pthread", "-o", prog, os.path.join(HERE, prog + ".c")], cwd=work)
    sh([cc, "-O2", "-I" + os.path.join(src, "src/format"), "-o", "compactcost",
        os.path.join(HERE, "compactcost.c"), os.path.join(build, "src/libatr_format.a"),
        os.path.join(build, "src/libatr_util.a"), "-lzstd", "-lm"], cwd=work)
    with open(os.path.join(work, "pyjson.py"), "w") as f:
        f.write(PYJSON.replace("PYN", str(a.pyn)))
    py = os.path.realpath(sys.executable)
    progs = [("python3 JSON (PYTHONMALLOC=malloc)", [py, "pyjson.py"], {"PYTHONMALLOC": "malloc"}),
             ("mixedbench 1 thread", ["./mixedbench", "1", str(a.mixed)], {}),
             ("xfreebench 8 threads", ["./xfreebench", "4", str(a.xfree)], {})]
    try:
        p("encode_later.py, %s; build %s; compaction level %d; %d round(s)\n"
          % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), build, a.level, a.rounds))
        p("| program | encode | calls | run: bytes on disk (B/call) | after compaction (B/call) "
          "| program CPU ns/call | compaction CPU ns/call | compaction max RSS |")
        p("|---|---|---:|---:|---:|---:|---:|---:|")
        for name, cmd, extra in progs:
            for r in range(a.rounds):
                for mode in ("thread", "later"):
                    d = os.path.join(work, "t")
                    sh(["rm", "-rf", d])
                    os.mkdir(d)
                    env = dict(os.environ, LD_PRELOAD=lib, ALLOCTRACE_DIR=d, ALLOCTRACE_ENCODE=mode,
                               **extra)
                    env.pop("ALLOCTRACE_FILE", None)
                    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    sh(cmd, env=env, cwd=work)
                    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    pcpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
                    n = calls_of(atr, d)
                    size, alloc = disk(d)
                    c = sh([os.path.join(work, "compactcost"), str(a.level)]
                           + sorted(glob.glob(os.path.join(d, "*.atr"))), cwd=work)
                    last = c.stdout.strip().splitlines()[-1].split()
                    ccpu, rss = float(last[1]), int(last[3])
                    n2 = calls_of(atr, d)
                    after, _ = disk(d)
                    if n2 != n:
                        raise RuntimeError("%s %s: %d calls before compaction, %d after"
                                           % (name, mode, n, n2))
                    p("| %s | %s | %s | %s (%.1f; allocated %.1f) | %s (%.2f) | %.0f | %.0f | %.1f MiB |"
                      % (name, mode, format(n, ","), format(size, ","), size / n, alloc / n,
                         format(after, ","), after / n, pcpu / n * 1e9, ccpu / n * 1e9, rss / 1024))
        p("\nLoad average at the end: %s." % " ".join(open("/proc/loadavg").read().split()[0:3]))
    finally:
        finish(work, out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
