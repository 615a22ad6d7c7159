#!/usr/bin/env python3
"""callcost.py - what the recorder costs the program's threads per call,
counted in instructions (deterministic, valgrind's callgrind) and timed for
what timing is worth on a shared machine (issue 9: <= 12 ns per call).

usage: bench/callcost.py --build BUILD [--base BUILD0] [--calls N] [--runs R]
                         [--no-time] [--no-count] [--zstd-level L]
                         [--env NAME=VALUE ...] [--out FILE]

* instructions: each case runs once under `valgrind --tool=callgrind
  --separate-threads=yes` with liballoctrace.so preloaded (and once
  untraced); in the program's threads, the self instructions of every
  function in liballoctrace.so and in libzstd per traced call (the call
  count is what `alloctrace info` counts in the trace, exact), split into
  the encoder (atr_v2_encode), zstd, and the rest of the library (the
  hooks, the writer's flush); every instruction the program's threads run
  more than untraced; and every instruction of the recorder's encoder
  thread (atp_offload.c, ALLOCTRACE_OFFLOAD), which the machine pays too.
  The kernel's share (pwrite, page faults) is not counted.
* time: R interleaved rounds of untraced / BUILD0 / BUILD runs, each under
  flock /tmp/alloctrace-bench.lock; added wall, CPU of the benchmark's
  worker threads (which they print: the encoder thread is not among them)
  and CPU of the process (user+sys), ns per call, medians with min-max.
  The untraced mixedbench calls are the same calls (fixed seeds).
  The comparison of main's recorder with this one on a quiet machine:
  bench/callcost.py --base MAIN_BUILD --build BUILD --no-count --runs 11
* instructions per ns: callgrind's instruction count of the untraced
  mallocbench divided by its CPU time (medians of the same rounds): the
  speed of this CPU on allocator-bound code, to turn instructions into ns.

Cases: mixedbench 1 and 8 threads (16 B..1 MiB, 20% calloc, 10% realloc,
same total calls), xfreebench 4 pairs (8 threads, cross-thread frees),
mallocbench 1 thread (16..512 B).
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_util import finish, sh  # noqa: E402
LOCK = "/tmp/alloctrace-bench.lock"


def atr_calls(alloctrace, path):
    """Calls in the program's trace: the largest of the files path* (under
    valgrind, its launcher and tool leave small traces of their own)."""
    best = 0
    for f in glob.glob(path + "*"):
        r = sh([alloctrace, "info", "--json", f], env=dict(os.environ, ALLOCTRACE_NO_PROGRESS="1"))
        best = max(best, sum(p["total_calls"] for p in json.loads(r.stdout)["processes"]))
        os.unlink(f)
    return best


# the encoder's functions (src/format/atr_v2.c), wherever the compiler left
# them out of line
ENC = re.compile(r"^(atr_v2_encode|put_var|put_secondary|put_xword|enc_|cache_use)")
LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s+\[(.*)\]\s*$")


def self_ir(outfile):
    """{(object basename, function): self Ir} from a callgrind output file."""
    r = sh(["callgrind_annotate", "--threshold=100", "--inclusive=no", outfile])
    res = {}
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        fn = m.group(2).split(":", 1)[-1]
        obj = os.path.basename(m.group(3))
        res[(obj, fn)] = res.get((obj, fn), 0) + ir
    return res


def total_ir(outfile):
    for line in open(outfile):
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError("no totals in " + outfile)


def timed(cmd, env, cwd):
    """(wall s, process CPU s, CPU s of the program's worker threads: the
    benchmarks print worker_cpu_ns, which leaves out the recorder's encoder
    thread)."""
    t0 = os.times()
    w0 = time.monotonic()
    r = subprocess.run(["flock", LOCK] + cmd, env=env, cwd=cwd, check=True, capture_output=True,
                       text=True)
    w1 = time.monotonic()
    t1 = os.times()
    m = re.search(r"^worker_cpu_ns=(\d+)$", r.stdout, re.M)
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    return w1 - w0, cpu, int(m.group(1)) / 1e9 if m else cpu


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def is_helper(ir):
    """A callgrind thread of the recorder's own (its encoder thread)."""
    return any("liballoctrace" in o and fn.startswith("encoder_main") for (o, fn) in ir)


def count(work, cmd, env, keep=None, tag=""):
    """One callgrind run, threads apart: ({(obj, fn): Ir} of the program's
    threads, all Ir of the program's threads, all Ir of the recorder's
    threads)."""
    cg = os.path.join(work, "cg.out")
    for f in glob.glob(cg + "*"):
        os.unlink(f)
    sh(["valgrind", "--tool=callgrind", "--separate-threads=yes", "--callgrind-out-file=" + cg] + cmd,
       env=env, cwd=work)
    prog, prog_all, helper_all = {}, 0, 0
    for f in sorted(glob.glob(cg + "-*")):  # one file per thread
        ir = self_ir(f)
        tot = total_ir(f)
        if keep:
            os.makedirs(keep, exist_ok=True)
            subprocess.run(["cp", f, os.path.join(keep, tag + os.path.basename(f))], check=True)
        if is_helper(ir):
            helper_all += tot
            continue
        prog_all += tot
        for k, v in ir.items():
            prog[k] = prog.get(k, 0) + v
    return prog, prog_all, helper_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="build directory (liballoctrace.so, alloctrace)")
    ap.add_argument("--base", help="a second build (e.g. main's) measured the same way, side by side")
    ap.add_argument("--calls", type=int, default=200000, help="calls per case under callgrind")
    ap.add_argument("--time-calls", type=int, default=2000000, help="calls per case in the timed runs")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds (0: none)")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--no-count", action="store_true", help="timed rounds only (no callgrind of the traced runs)")
    ap.add_argument("--zstd-level", help="ALLOCTRACE_ZSTD_LEVEL for the traced runs")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the traced runs")
    ap.add_argument("--cases", default="mixed1,mixed8,xfree,malloc")
    ap.add_argument("--keep", help="copy the callgrind outputs to this directory")
    ap.add_argument("--out")
    a = ap.parse_args()
    builds = [("build", os.path.abspath(a.build))]
    if a.base:
        builds.insert(0, ("base", os.path.abspath(a.base)))
    atr = os.path.join(builds[-1][1], "alloctrace")
    work = tempfile.mkdtemp(prefix="alloctrace-callcost.")
    out = []
    p = out.append
    cc = os.environ.get("CC", "gcc")
    for prog in ("mixedbench", "xfreebench", "mallocbench"):
        sh([cc, "-O2", "-pthread", "-o", prog, os.path.join(HERE, prog + ".c")], cwd=work)

    def cmd_of(case, n):
        return {
            "mixed1": ["./mixedbench", "1", str(n)],
            "mixed8": ["./mixedbench", "8", str(n // 8)],
            "xfree": ["./xfreebench", "4", str(n // 8)],
            "malloc": ["./mallocbench", "1", str(n // 2)],
        }[case]

    names = {"mixed1": "mixedbench 1 thread", "mixed8": "mixedbench 8 threads",
             "xfree": "xfreebench 8 threads", "malloc": "mallocbench 1 thread"}
    cases = a.cases.split(",")
    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    settings = {}
    if a.zstd_level is not None:
        settings["ALLOCTRACE_ZSTD_LEVEL"] = a.zstd_level
    for kv in a.env:
        k, v = kv.split("=", 1)
        settings[k] = v

    def traced_env(bdir):
        return dict(base, LD_PRELOAD=os.path.join(bdir, "liballoctrace.so"), **settings)

    def git_of(bdir):
        src = HERE
        cache = os.path.join(bdir, "CMakeCache.txt")
        if os.path.exists(cache):
            m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", open(cache).read(), re.M)
            if m:
                src = m.group(1)
        return subprocess.run(["git", "-C", src, "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True).stdout.strip() or "(no git)"

    try:
        p("callcost.py, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        for tag, bdir in builds:
            p("%s: %s (%s)" % (tag, bdir, git_of(bdir)))
        p("settings: %s\n" % (" ".join("%s=%s" % kv for kv in sorted(settings.items())) or "defaults"))
        ir_per_call = {}
        if not a.no_count:
            p("## Instructions per traced call (callgrind --separate-threads=yes)\n")
            p("Program threads: self instructions of liballoctrace.so (encoder, the rest) and libzstd; "
              "'all added' = every instruction of the program's threads minus the untraced run's. "
              "Recorder thread: every instruction of the encoder thread (atp_offload.c). "
              "Machine = all added + recorder thread.\n")
            p("| case | build | calls | encoder | zstd | rest of liballoctrace | **program threads** "
              "| all added, program threads | recorder thread | machine | top functions of the rest |")
            p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for c in cases:
                _, untraced_all, _ = count(work, cmd_of(c, a.calls), base)
                for tag, bdir in builds:
                    f = os.path.join(work, c + ".atr")
                    env = dict(traced_env(bdir), ALLOCTRACE_FILE=f)
                    ir, prog_all, helper_all = count(work, cmd_of(c, a.calls), env, a.keep, tag + "." + c + ".")
                    n = atr_calls(atr, f)
                    enc = sum(v for (o, fn), v in ir.items() if "liballoctrace" in o and ENC.match(fn))
                    zs = sum(v for (o, fn), v in ir.items() if "libzstd" in o)
                    lib_all = sum(v for (o, fn), v in ir.items() if "liballoctrace" in o)
                    rest = sorted(((v, fn) for (o, fn), v in ir.items()
                                   if "liballoctrace" in o and not ENC.match(fn)), reverse=True)
                    top = ", ".join("%s %.0f" % (fn, v / n) for v, fn in rest[:5])
                    tot = (lib_all + zs) / n
                    added = (prog_all - untraced_all) / n
                    ir_per_call[(c, tag)] = tot
                    p("| %s | %s | %s | %.0f | %.0f | %.0f | **%.0f** | %.0f | %.0f | %.0f | %s |" % (
                        names[c], tag, format(n, ","), enc / n, zs / n, (lib_all - enc) / n, tot, added,
                        helper_all / n, added + helper_all / n, top))
        if a.no_time or a.runs <= 0:
            return 0
        # the speed of this CPU: the untraced mallocbench's instructions
        ncg = os.path.join(work, "ipns.cg")
        sh(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + ncg] + cmd_of("malloc", a.time_calls),
           env=base, cwd=work)
        ipns_ir = total_ir(ncg)
        res = {}
        kinds = ["untraced"] + [tag for tag, _ in builds]
        for rep in range(a.runs):
            for c in cases + ["ipns"]:
                cmd = cmd_of("malloc" if c == "ipns" else c, a.time_calls)
                for kind in (("untraced",) if c == "ipns" else kinds):
                    f = os.path.join(work, "t.atr")
                    env = base if kind == "untraced" else dict(traced_env(dict(builds)[kind]),
                                                               ALLOCTRACE_FILE=f)
                    res.setdefault((c, kind), []).append(timed(cmd, env, work))
                    if kind != "untraced":
                        n = atr_calls(atr, f)
                        res.setdefault("calls", {}).setdefault(c, n)
        p("\n## Time added per call, %d interleaved rounds (flock %s), median (min-max)\n" % (a.runs, LOCK))
        p("'program threads' is the CPU time the benchmark's worker threads report for themselves "
          "(CLOCK_THREAD_CPUTIME_ID; the recorder's encoder thread is not among them); 'process' "
          "is user+sys of the whole process.\n")
        p("| case | build | calls | untraced CPU ns/call | added wall ns/call | added CPU ns/call, "
          "program threads | added CPU ns/call, process | instructions/call |")
        p("|---|---|---:|---:|---:|---:|---:|---:|")
        for c in cases:
            n = res["calls"][c]
            u = res[(c, "untraced")]
            uw = statistics.median(x[0] for x in u)
            uc = statistics.median(x[1] for x in u)
            ut = statistics.median(x[2] for x in u)
            for tag, _ in builds:
                t = res[(c, tag)]
                wm = med([(x[0] - uw) / n * 1e9 for x in t])
                tm = med([(x[2] - ut) / n * 1e9 for x in t])
                cm = med([(x[1] - uc) / n * 1e9 for x in t])
                p("| %s | %s | %s | %.0f | %.1f (%.1f..%.1f) | %.1f (%.1f..%.1f) | %.1f (%.1f..%.1f) | %s |" % (
                    names[c], tag, format(n, ","), uc / n * 1e9, *wm, *tm, *cm,
                    "%.0f" % ir_per_call[(c, tag)] if (c, tag) in ir_per_call else "-"))
        cpus = [x[1] for x in res[("ipns", "untraced")]]
        p("\nThis CPU on the untraced mallocbench: %s instructions in %.3f s CPU (median; %.3f..%.3f) ="
          " **%.2f instructions/ns**." % (format(ipns_ir, ","), statistics.median(cpus), min(cpus), max(cpus),
                                          ipns_ir / statistics.median(cpus) / 1e9))
        p("Load average at the end: %s." % " ".join(open("/proc/loadavg").read().split()[0:3]))
    finally:
        finish(work, out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
