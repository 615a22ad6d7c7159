#!/usr/bin/env python3
"""zstd_sweep.py - zstd's instructions per call against trace bytes per
call, for levels and parameters (issue 9: the default level).

usage: bench/zstd_sweep.py --build BUILD [--pyn N] [--xfree N] [--out FILE]

Records python3 (PYTHONMALLOC=malloc, a JSON dump+load), cc1plus (-O2 on a
preprocessed C++ file), xfreebench (8 threads, cross-thread frees) and
mixedbench (1 thread) once with ALLOCTRACE_ZSTD_LEVEL=0 (frames hold the
compact encoding as is), then recompresses every frame with each parameter
set (bench/zstd_sweep.c, one ZSTD_compress2 per frame as the recorder does,
checksum on) under callgrind, counting only inside ZSTD_compress2.
Bytes per call: frame headers + payloads (padded) over the calls in the
frames, i.e. what the trace grows by per call (without the one staging
block per thread a trace file also keeps).  Deterministic: no timing.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_util import finish, real_programs, sh  # noqa: E402
ROOT = os.path.dirname(HERE)

# (name, level, strategy, windowLog, targetLength, minMatch); 0: the level's own
SETS = [
    ("level 3", 3, 0, 0, 0, 0),
    ("level 2", 2, 0, 0, 0, 0),
    ("level 1", 1, 0, 0, 0, 0),
    ("level 1 minMatch 7", 1, 0, 0, 0, 7),
    ("level -1", -1, 0, 0, 0, 0),
    ("level -2", -2, 0, 0, 0, 0),
    ("level -3", -3, 0, 0, 0, 0),
    ("level -5", -5, 0, 0, 0, 0),
    ("level -10", -10, 0, 0, 0, 0),
]

def totals(cg):
    for line in open(cg):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError("no totals in " + cg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--pyn", type=int, default=100000)
    ap.add_argument("--xfree", type=int, default=250000, help="blocks per producer")
    ap.add_argument("--mixed", type=int, default=1000000, help="mixedbench calls")
    ap.add_argument("--sets", help="comma-separated names of SETS to run (default all)")
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    lib = os.path.join(build, "liballoctrace.so")
    work = tempfile.mkdtemp(prefix="alloctrace-zsweep.")
    out = []
    p = out.append
    try:
        cc = os.environ.get("CC", "gcc")
        sh([cc, "-O2", "-I", ROOT + "/src/format", "-o", "zstd_sweep", HERE + "/zstd_sweep.c", "-lzstd"], cwd=work)
        sh([cc, "-O2", "-pthread", "-o", "xfreebench", HERE + "/xfreebench.c"], cwd=work)
        sh([cc, "-O2", "-pthread", "-o", "mixedbench", HERE + "/mixedbench.c"], cwd=work)
        cc1plus = real_programs(work, a.pyn)
        progs = [
            ("python3 JSON", ["/usr/bin/python3", "pyjson.py"], {"PYTHONMALLOC": "malloc"}),
            ("cc1plus -O2", [cc1plus, "-quiet", "-O2", "t.ii", "-o", "/dev/null"], {}),
            ("xfreebench 8 thr", ["./xfreebench", "4", str(a.xfree)], {}),
            ("mixedbench 1 thr", ["./mixedbench", "1", str(a.mixed)], {}),
        ]
        base = dict(os.environ)
        base.pop("LD_PRELOAD", None)
        files = {}
        for name, cmd, extra in progs:
            f = os.path.join(work, "p%d.atr" % len(files))
            env = dict(base, LD_PRELOAD=lib, ALLOCTRACE_FILE=f, ALLOCTRACE_ZSTD_LEVEL="0", **extra)
            sh(cmd, env=env, cwd=work)
            files[name] = f
        sets = [s for s in SETS if not a.sets or s[0] in a.sets.split(",")]
        rows = {}
        for s in sets:
            for name, _, _ in progs:
                cg = os.path.join(work, "cg.out")
                r = sh(["valgrind", "--tool=callgrind", "--toggle-collect=ZSTD_compress2",
                        "--callgrind-out-file=" + cg, "./zstd_sweep"] + [str(x) for x in s[1:]] + [files[name]],
                       cwd=work)
                kv = dict(t.split("=") for t in r.stdout.split())
                calls = int(kv["calls"])
                raw = int(kv["raw"]) + 64 * int(kv["frames"])
                if not calls:
                    raise RuntimeError("%s: no full block was flushed: give it more calls" % name)
                rows[(s[0], name)] = (totals(cg) / calls, int(kv["unit"]) / calls, raw / calls, calls)
        p("zstd_sweep.py, %s; build %s\n" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), build))
        p("Cells: zstd instructions per call / trace bytes per call (frames: headers + payloads).\n")
        p("| parameters | " + " | ".join(n for n, _, _ in progs) + " |")
        p("|---|" + "---:|" * len(progs))
        p("| no zstd (level 0) | " + " | ".join(
            "0 / %.2f" % rows[(sets[0][0], n)][2] for n, _, _ in progs) + " |")
        for s in sets:
            p("| %s | %s |" % (s[0], " | ".join(
                "%.0f / %.2f" % rows[(s[0], n)][:2] for n, _, _ in progs)))
        p("\nCalls in frames: " + ", ".join(
            "%s %s" % (n, format(rows[(sets[0][0], n)][3], ",")) for n, _, _ in progs) + ".")
    finally:
        finish(work, out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
