#!/usr/bin/env python3
"""A/B of two replay settings or builds on fidelity.py's programs, against one reality.

Each program is traced and converted once and run for real under the six
configurations (fidelity.py's CONFIGS, RUNS rounds, the order rotated); then
`alloctrace compare` replays the one workload with A's extra arguments and
with B's, one run each, A and B alternating RUNS times (so both see the same
machine).  Prints fidelity.py's table for A and for B, and per program the
replay's glibc wall time against the real glibc wall time (the verdict's
predicted run time).  Writes WORK/ab.json.

    bench/fidelity/ab.py --build DIR --work DIR --runs N --programs a,b \\
        --a-args='--think whole' --b-args='' [--b-build DIR]

--b-build replays B with another build's alloctrace (default: --build's);
the trace is recorded and converted with --build's, unless --b-record:
then B records and converts a trace of its own with its build (for a
change to the recorder or to convert; the real runs stay shared).

Used for bench/fidelity/RESULTS.md, "The replay's own work between calls".
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity as F  # noqa: E402


def one_compare(at, wl, cols, extra):
    out = subprocess.run([at, "compare", wl, "--allocators", cols, "--runs", "1", "--timing", "off", "--json"]
                         + extra, capture_output=True, text=True, check=True).stdout
    return {x["allocator"]: x for x in json.loads(out)["allocators"]}


def summarize(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--work", default="/tmp/alloctrace-fidelity-ab")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--programs", default="python,perl,sqlite3,python-threads,git-repack")
    ap.add_argument("--a-args", default="--think whole")
    ap.add_argument("--b-args", default="")
    ap.add_argument("--b-build", default="")
    ap.add_argument("--b-record", action="store_true", help="B traces and converts with its own build")
    a = ap.parse_args()
    at = os.path.abspath(os.path.join(a.build, "alloctrace"))
    tool = {"A": at, "B": os.path.abspath(os.path.join(a.b_build, "alloctrace")) if a.b_build else at}
    os.makedirs(a.work, exist_ok=True)
    progs = F.programs(a.work)
    args = {"A": shlex.split(a.a_args), "B": shlex.split(a.b_args)}
    res = {v: {"runs": a.runs, "args": args[v], "programs": {}} for v in ("A", "B")}
    for name in a.programs.split(","):
        argv, extra, _ = progs[name]
        print("ab: %s" % name, file=sys.stderr, flush=True)
        wl, calls, threads, _ = F.trace_and_convert(at, name, argv, extra, a.work, [])
        wls = {"A": wl, "B": wl}
        if a.b_record:
            wls["A"] = wl + ".A"
            os.rename(wl, wls["A"])
            wls["B"], _, _, _ = F.trace_and_convert(tool["B"], name, argv, extra, a.work, [])
        real = {c[0]: [] for c in F.CONFIGS}
        for r in range(a.runs):
            order = F.CONFIGS[r % len(F.CONFIGS):] + F.CONFIGS[:r % len(F.CONFIGS)]
            for cname, pre, tun, _ in order:
                real[cname].append(F.run_real(argv, F.env_for(extra, pre, tun), a.work, F.RATE.get(name)))
        cols = ",".join(c[3] for c in F.CONFIGS)
        runs = {"A": [], "B": []}
        for r in range(a.runs):
            for v in (("A", "B") if r % 2 == 0 else ("B", "A")):
                runs[v].append(one_compare(tool[v], wls[v], cols, args[v]))
        for v in ("A", "B"):
            p = {"calls": calls, "threads": threads, "real": {}, "replay": {}}
            for cname, _, _, col in F.CONFIGS:
                p["real"][cname] = {k: F.summarize([x[k] for x in real[cname]])
                                    for k in ("wall_s", "cpu_s", "maxrss_mib")}
                rs = [x[col] for x in runs[v]]
                p["replay"][cname] = {"wall_s": summarize([x["wall_ms"]["median"] / 1e3 for x in rs]),
                                      "cpu_s": summarize([x["thread_cpu_ms"]["median"] / 1e3 for x in rs]),
                                      "maxrss_mib": summarize([x["max_rss_mib"]["median"] for x in rs])}
            res[v]["programs"][name] = p
            print("%s %s: replay glibc wall %.3f s, real %.3f s (x%.2f)" % (
                v, name, p["replay"]["glibc"]["wall_s"]["median"], p["real"]["glibc"]["wall_s"]["median"],
                p["replay"]["glibc"]["wall_s"]["median"] / p["real"]["glibc"]["wall_s"]["median"]), flush=True)
        for w in set(wls.values()):
            os.unlink(w)
    json.dump(res, open(os.path.join(a.work, "ab.json"), "w"), indent=1)
    for v in ("A", "B"):
        print("\n== %s: %s compare %s\n" % (v, tool[v], " ".join(args[v]) or "(defaults)"))
        print(F.table(res[v]))


if __name__ == "__main__":
    main()
