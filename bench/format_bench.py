#!/usr/bin/env python3
"""format_bench.py - issue 9's table: trace bytes per call and added ns per
call of alloctrace (format v2) side by side with the v1 recorder, heaptrack
and glibc's mtrace, in one run.

usage: bench/format_bench.py --build BUILD [--v1-build V1BUILD] [--runs 5]
                             [--out bench/results/NAME.md]

* bytes/call: python3 (PYTHONMALLOC=malloc) on a JSON script, cc1plus (the
  C++ compiler proper, run directly on a preprocessed file; alloctrace also
  through the g++ driver, children included) and xfreebench (8 threads,
  cross-thread frees).  The divisor is the call count alloctrace records
  (exact: it equals the programs' own counters in tests/), the same for
  every tool.
* ns/call added: mixedbench (16 B..1 MiB, 20% calloc, 10% realloc) at 1,
  2, 4 and 8 threads with the same total calls, and xfreebench; wall and
  CPU (user+sys), medians of --runs interleaved runs with min-max.  Every
  timed run holds flock /tmp/alloctrace-bench.lock (HELPER_RULES).
* alloctrace ZSTD_LEVEL=0 (compact encoding, no zstd) isolates what the
  compression costs the calling thread: bench/RESULTS.md, "Where
  compression runs".
* info speed: records/s of `alloctrace info` (user time) on the traces.
"""
import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_util import real_programs  # noqa: E402
LOCK = "/tmp/alloctrace-bench.lock"

def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def timed(cmd, env, cwd):
    """(wall, cpu) of one run under the bench lock; cpu includes children."""
    t0 = os.times()
    w0 = time.monotonic()
    r = subprocess.run(["flock", LOCK] + cmd, env=env, cwd=cwd, capture_output=True, text=True)
    w1 = time.monotonic()
    t1 = os.times()
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd, r.stderr[-2000:]))
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    return w1 - w0, cpu, r.stdout


def calls_of(out):
    for tok in out.split():
        if tok.startswith("calls="):
            return int(tok[6:])
    raise RuntimeError("no calls= in output")


def du(paths):
    return sum(os.path.getsize(p) for p in paths)


def atr_calls(alloctrace, path):
    r = sh([alloctrace, "info", "--json", path], env=dict(os.environ, ALLOCTRACE_NO_PROGRESS="1"))
    return sum(p["total_calls"] for p in json.loads(r.stdout)["processes"])


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def fmt(m, scale=1.0, nd=1):
    a, lo, hi = (x * scale for x in m)
    return "%.*f (%.*f-%.*f)" % (nd, a, nd, lo, nd, hi)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--v1-build", help="a build of the v1 recorder (main before issue 9)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000000, help="mixedbench calls (total)")
    ap.add_argument("--xfree", type=int, default=1000000, help="blocks per producer")
    ap.add_argument("--pyn", type=int, default=300000)
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    lib = os.path.join(build, "liballoctrace.so")
    atr = os.path.join(build, "alloctrace")
    v1lib = os.path.join(os.path.abspath(a.v1_build), "liballoctrace.so") if a.v1_build else None
    mtrace_lib = "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
    work = tempfile.mkdtemp(prefix="alloctrace-fmtbench.")
    out = []
    p = out.append
    try:
        cc = os.environ.get("CC", "gcc")
        sh([cc, "-O2", "-pthread", "-o", "mixedbench", os.path.join(HERE, "mixedbench.c")], cwd=work)
        sh([cc, "-O2", "-pthread", "-o", "xfreebench", os.path.join(HERE, "xfreebench.c")], cwd=work)
        sh([cc, "-O2", "-shared", "-fPIC", "-o", "libmtrace_start.so", os.path.join(HERE, "mtrace_start.c")], cwd=work)
        cc1plus = real_programs(work, a.pyn)
        base = dict(os.environ)
        base.pop("LD_PRELOAD", None)

        # ---- tools ------------------------------------------------------
        def env_atr(file, lib_=lib, extra=None):
            e = dict(base, LD_PRELOAD=lib_, ALLOCTRACE_FILE=file)
            e.update(extra or {})
            return e

        def env_mtrace(file):
            return dict(base, LD_PRELOAD=mtrace_lib + " " + os.path.join(work, "libmtrace_start.so"),
                        MALLOC_TRACE=file)

        tools = [("untraced", None)]
        tools.append(("alloctrace v2", lambda f: (env_atr(f), [])))
        tools.append(("alloctrace v2, no zstd", lambda f: (env_atr(f, extra={"ALLOCTRACE_ZSTD_LEVEL": "0"}), [])))
        if v1lib:
            tools.append(("alloctrace v1", lambda f: (env_atr(f, lib_=v1lib), [])))
        tools.append(("heaptrack", lambda f: (base, ["heaptrack", "-o", f])))
        tools.append(("mtrace", lambda f: (env_mtrace(f), [])))

        def trace_files(f):
            return [x for x in glob.glob(f + "*") if not x.endswith(".txt.lock")]

        # ---- bytes per call --------------------------------------------
        progs = [
            ("python3 JSON (PYTHONMALLOC=malloc)", ["/usr/bin/python3", "pyjson.py"], {"PYTHONMALLOC": "malloc"}),
            ("cc1plus -O2 (C++ compile)", [cc1plus, "-quiet", "-O2", "t.ii", "-o", "/dev/null"], {}),
            ("xfreebench 8 threads (cross-thread frees)", ["./xfreebench", "4", str(a.xfree)], {}),
        ]
        p("## Bytes per call\n")
        p("Divisor: the calls alloctrace recorded (the same program run, exact).  "
          "Trace bytes: the trace files' sizes (heaptrack: its .zst; mtrace: its text).\n")
        p("| program | calls | " + " | ".join(t for t, _ in tools[1:]) + " |")
        p("|---|---:|" + "---:|" * (len(tools) - 1))
        for name, cmd, extra in progs:
            row = {}
            calls = None
            for tname, tf in tools[1:]:
                if tname == "mtrace" and "cc1plus" in name:
                    # mtrace resolves each caller by a linear scan of
                    # cc1plus's 28k dynamic symbols: minutes per run
                    row[tname] = "not run"
                    continue
                f = os.path.join(work, "sz." + tname.replace(" ", "_").replace(",", ""))
                env, pre = tf(f + (".atr" if "alloctrace" in tname else ""))
                env = dict(env, **extra)
                r = subprocess.run(pre + cmd, env=env, cwd=work, capture_output=True, text=True)
                if r.returncode:
                    row[tname] = "failed"
                    continue
                files = trace_files(f)
                row[tname] = du(files)
                if tname == "alloctrace v2":
                    calls = atr_calls(atr, files[0])
                for x in files:
                    os.unlink(x)
            cells = []
            for tname, _ in tools[1:]:
                v = row.get(tname)
                cells.append(v if isinstance(v, str) else "%.2f" % (v / calls))
            p("| %s | %s | %s |" % (name, format(calls, ","), " | ".join(cells)))
        # the g++ driver with its children, alloctrace only
        d = os.path.join(work, "gxx")
        r = subprocess.run([atr, "record", "-o", d, "--no-rss", "g++", "-O2", "-c", "t.cpp", "-o", "t.o"],
                           cwd=work, capture_output=True, text=True, env=base)
        files = glob.glob(os.path.join(d, "*.atr"))
        gcalls = sum(atr_calls(atr, x) for x in files)
        p("\n`alloctrace record g++ -O2 -c t.cpp` (driver, cc1plus, as: %d files): %s calls, %.2f B/call"
          " (each process also keeps one 256 KiB staging block per thread on disk)."
          % (len(files), format(gcalls, ","), du(files) / gcalls))
        shutil.rmtree(d, ignore_errors=True)

        # ---- ns per call -----------------------------------------------
        cases = [("mixedbench %d thr" % t, ["./mixedbench", str(t), str(a.calls // t)]) for t in (1, 2, 4, 8)]
        cases.append(("xfreebench 8 thr", ["./xfreebench", "4", str(a.xfree // 4)]))
        res = {}
        ncalls = {}
        for rep in range(a.runs):
            for cname, cmd in cases:
                for tname, tf in tools:
                    if tname == "mtrace" and rep >= 3:
                        continue  # ~10x slower: three runs are enough
                    f = os.path.join(work, "t." + str(rep))
                    if tf is None:
                        env, pre = base, []
                    else:
                        env, pre = tf(f + (".atr" if "alloctrace" in tname else ""))
                    w, c, so = timed(pre + cmd, env, work)
                    ncalls[cname] = calls_of(so)
                    res.setdefault((cname, tname), []).append((w, c))
                    for x in trace_files(f):
                        os.unlink(x)
        p("\n## Added ns per call (wall; CPU = user+sys), median (min-max) of %d runs\n" % a.runs)
        p("| case | calls | untraced ns/call | " + " | ".join(t for t, _ in tools[1:]) + " |")
        p("|---|---:|---:|" + "---|" * (len(tools) - 1))
        for cname, _ in cases:
            n = ncalls[cname]
            u = res[(cname, "untraced")]
            uw = statistics.median(x[0] for x in u)
            uc = statistics.median(x[1] for x in u)
            cells = []
            for tname, _ in tools[1:]:
                v = res.get((cname, tname))
                if not v:
                    cells.append("")
                    continue
                wm = med([(x[0] - uw) / n * 1e9 for x in v])
                cm = med([(x[1] - uc) / n * 1e9 for x in v])
                cells.append("%s; CPU %.1f" % (fmt(wm), cm[0]))
            p("| %s | %s | %.0f | %s |" % (cname, format(n, ","), uw / n * 1e9, " | ".join(cells)))

        # ---- info speed ------------------------------------------------
        p("\n## `alloctrace info` speed (user+sys CPU, median of 3)\n")
        for cname, cmd in (cases[0], cases[-1]):
            f = os.path.join(work, "info.atr")
            subprocess.run(cmd, env=env_atr(f), cwd=work, capture_output=True, check=True)
            nrec = atr_calls(atr, f)
            cpus = []
            for _ in range(3):
                w, c, _o = timed([atr, "info", f], dict(base, ALLOCTRACE_NO_PROGRESS="1"), work)
                cpus.append(c)
            cm = statistics.median(cpus)
            p("- %s: %s calls, %.2f B/call, info %.2f s CPU = **%.1f M calls/s**"
              % (cname, format(nrec, ","), os.path.getsize(f) / nrec, cm, nrec / cm / 1e6))
            os.unlink(f)

        # ---- machine ---------------------------------------------------
        p("\n## Machine\n")
        p("- %s, %d cores, kernel %s" % (cpu_model(), os.cpu_count(), platform.release()))
        p("- load average at the end: %s (other sessions shared the machine)" % open("/proc/loadavg").read().split()[0:3])
        p("- heaptrack %s, python %s" % (tool_version(["heaptrack", "--version"]), platform.python_version()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write("# format_bench.py, %s\n\n" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) + text)


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def tool_version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().split()[-1]
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
