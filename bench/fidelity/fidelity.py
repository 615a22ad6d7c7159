#!/usr/bin/env python3
"""Replay fidelity (issue 12): does `alloctrace compare` predict what another
allocator or a glibc tunable does to a real program?

Each program runs for real under every configuration (interleaved, the
configuration order rotated each round), then is traced once, converted and
replayed with `alloctrace compare` under the same configurations.  Per
program and metric (wall time, CPU time, Max RSS) the table gives reality's
ratio to glibc, the replay's, and whether their directions agree where
reality resolves a difference (the min-max ranges of the configuration and
of glibc do not overlap).

    bench/fidelity/run.sh [--build DIR] [--work DIR] [--runs N] [--programs a,b]
                          [--thirdparty BINDIR] [--convert-args='ARGS']

--convert-args passes ARGS to `alloctrace convert` (for example
--no-handoffs, to measure a rule of convert's by its absence); convert's
own summary lines go to the JSON (per program: "convert").

--thirdparty adds the allocator benchmarks of issue 19 (larson,
xmalloc-test, mimalloc's test-stress, alloc-test), built by
bench/fidelity/thirdparty.sh from their public sources.  larson and
xmalloc-test run for a fixed time and print their own throughput: their time
metric is reality's time per operation (from that output) against the
replay's wall time for the traced operations (the wall and CPU rows would
only show the fixed run time).  alloc-test does a fixed amount of work and
prints the time its threads took: its time row is that time per operation
(process start and exit left out), and its CPU row stays.

Needs scripts/setup-deps.sh (allocators) and a build; ~1 GB in --work.
Writes WORK/fidelity.json and WORK/fidelity.md (also printed).
"""
import argparse
import fcntl
import re
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

LIBDIR = "/usr/lib/" + subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
CONFIGS = [  # name, LD_PRELOAD, GLIBC_TUNABLES, compare column
    ("glibc", None, None, "glibc"),
    ("jemalloc", LIBDIR + "/libjemalloc.so.2", None, "jemalloc"),
    ("tcmalloc", LIBDIR + "/libtcmalloc_minimal.so.4", None, "tcmalloc"),
    ("mimalloc", LIBDIR + "/libmimalloc.so.2.0", None, "mimalloc"),
    ("arena_max=1", None, "glibc.malloc.arena_max=1", "glibc+glibc.malloc.arena_max=1"),
    ("mmap_threshold=65536", None, "glibc.malloc.mmap_threshold=65536",
     "glibc+glibc.malloc.mmap_threshold=65536"),
]
PY = "/usr/bin/python3"  # not a pyenv shim

ALLOC_PY = r'''
import json, sys
N = int(sys.argv[1])
data = [{"id": i, "name": "item%06d" % i, "tags": ["t%d" % ((i * 7 + k) % 1000) for k in range(6)],
         "score": (i * 2654435761 % 1000003) / 7.0} for i in range(N)]
s = json.dumps(data)
back = json.loads(s)
groups = {}
for d in back:
    groups.setdefault(d["name"][-2:], []).append(d["id"])
del data
churn = 0
for r in range(10):
    tmp = {str(x) * 3: x for x in range(20000)}
    churn += len(tmp)
back.sort(key=lambda d: (d["score"], d["id"]))
print(len(s), len(groups), churn)
'''

THREADS_PY = r'''
# two threads building and dropping dicts and strings; frees cross threads
# through the queue (PYTHONMALLOC=malloc: every object goes to malloc)
import queue, threading
q = queue.Queue(maxsize=64)
def producer(n):
    for i in range(n):
        q.put({str(j) + "x" * (j % 40): [j] * (j % 7) for j in range(i % 50, i % 50 + 60)})
    q.put(None)
def consumer(out):
    total = 0
    while True:
        d = q.get()
        if d is None:
            break
        total += sum(len(k) for k in d)
    out.append(total)
out = []
ts = [threading.Thread(target=producer, args=(20000,)), threading.Thread(target=consumer, args=(out,))]
for t in ts: t.start()
for t in ts: t.join()
print(out[0])
'''

PERL = r'''
my %h; my @a;
for my $i (0 .. 300000) {
    my $k = sprintf("key%07d", ($i * 7919) % 300001);
    $h{$k} = [$i, "v" x ($i % 30), { n => $i }];
    push @a, join(",", $i, $k) if $i % 3 == 0;
}
my $n = 0;
for my $k (sort keys %h) { $n += length($h{$k}[1]); delete $h{$k} if $n % 5 == 0; }
my $s = join(";", @a); my @b = split /;/, $s;
print scalar(keys %h), " ", scalar(@b), " $n\n";
'''


def gen_cpp(n):
    out = ["#include <map>", "#include <string>", "#include <vector>", "#include <memory>",
           "#include <unordered_map>", "#include <algorithm>", "#include <sstream>"]
    for i in range(n):
        out.append(f'''
namespace m{i} {{
template <class T> struct Box{i} {{ std::vector<T> v; std::map<std::string, T> m; }};
std::string f{i}(int k) {{
    Box{i}<int> b; std::ostringstream os;
    for (int j = 0; j < k; j++) {{ b.v.push_back(j * {i + 1}); b.m[std::to_string(j)] = j; }}
    std::sort(b.v.begin(), b.v.end(), [](int x, int y) {{ return (x ^ {i}) < (y ^ {i}); }});
    std::unordered_map<int, std::unique_ptr<std::string>> u;
    for (auto &p : b.m) u[p.second] = std::make_unique<std::string>(p.first + "{i}");
    for (auto x : b.v) os << x << (u.count(x) ? *u[x] : std::string("-"));
    return os.str();
}}
}}''')
    out.append("int main() { std::size_t s = 0;")
    out += [f"  s += m{i}::f{i}({i % 17 + 3}).size();" for i in range(n)]
    out.append("  return (int)(s & 1); }")
    return "\n".join(out)


def gen_sql(n):
    out = ["CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, cat INTEGER, price REAL, descr TEXT);", "BEGIN;"]
    for i in range(n):
        out.append("INSERT INTO item VALUES(%d,'item%06d',%d,%d.%02d,'%s');" % (
            i, (i * 7919) % n, i % 97, (i * 31) % 1000, i % 100, ("d%05d " % (i % 1000)) * (1 + i % 5)))
    out += ["COMMIT;", "CREATE INDEX item_name ON item(name);", "CREATE INDEX item_cat ON item(cat, price);",
            "SELECT cat, count(*), avg(price) FROM item GROUP BY cat ORDER BY 2 DESC LIMIT 3;",
            "UPDATE item SET descr = descr || '!' WHERE cat % 3 = 0;", "DELETE FROM item WHERE cat % 5 = 1;",
            "SELECT count(*), sum(length(descr)) FROM item;", "VACUUM;"]
    return "\n".join(out)


# programs that time themselves: regex on their output -> ns per operation
RATE = {
    "larson": (r"Throughput = *([0-9.]+) operations per second", lambda x: 1e9 / x),
    "xmalloc-test": (r"free/sec: ([0-9.]+) M", lambda x: 1e3 / x),
    "alloc-test": (r"made ([0-9]+) alloc/dealloc operations in ([0-9]+) ms", lambda ops, ms: ms * 1e6 / ops),
}
FIXED_WORK = {"alloc-test"}  # of RATE: a fixed amount of work, so CPU time means something too


def thirdparty(bindir):
    b = os.path.abspath(bindir)
    return {
        "larson": ([b + "/larson", "1", "8", "1000", "1000", "100", "4141", "2"], {},
                   "larson (mimalloc-bench; C++, 2 threads, each respawned after 100k ops, 1 s + 2 s idle): "
                   "sizes 8-1000"),
        "xmalloc-test": ([b + "/xmalloc-test", "-w", "2", "-t", "2", "-s", "-1"], {},
                         "xmalloc-test (mimalloc-bench; C, 2 producers + 2 consumers, 2 s): cross-thread frees"),
        "test-stress": ([b + "/test-stress", "8", "25", "10"], {},
                        "mimalloc test-stress (C; 8 threads x 10 waves = 80 threads over the run)"),
        # mimalloc-bench's bench.sh runs `alloc-test 1` and `alloc-test $procs`
        "alloc-test": ([b + "/alloc-test", "2"], {},
                       "alloc-test (mimalloc-bench, OLogN; C++17, 2 threads): each keeps 131072 slots, half filled, "
                       "then new[]/delete[] at Pareto-chosen slots (80/20), sizes 5-1024 B (half 5-8 B), every "
                       "byte written and read; $ALLOC_TEST_ITERS (thirdparty.sh, default 20 M) ops per thread"),
    }


def programs(work):
    """name -> (argv, extra env, description); inputs written into work."""
    cc1plus = subprocess.run(["gcc", "-print-prog-name=cc1plus"], capture_output=True, text=True).stdout.strip()
    w = lambda name, text: open(os.path.join(work, name), "w").write(text)
    w("alloc.py", ALLOC_PY)
    w("threads.py", THREADS_PY)
    w("h.pl", PERL)
    w("x.cpp", gen_cpp(60))
    subprocess.run(["g++", "-E", "x.cpp", "-o", "x.ii"], cwd=work, check=True)
    w("s.sql", gen_sql(120000))
    repo = os.path.join(work, "repo.git")
    if not os.path.isdir(repo):
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        subprocess.run(["git", "clone", "-q", "--bare", src, repo], check=True)
    return {
        "python": ([PY, "alloc.py", "60000"], {"PYTHONMALLOC": "malloc"},
                   "CPython 3 (C, 1 thread): JSON round trip, dicts, sort; PYTHONMALLOC=malloc"),
        "python-threads": ([PY, "threads.py"], {"PYTHONMALLOC": "malloc"},
                           "CPython 3 (C, 2 threads): producer/consumer of dicts, frees cross threads"),
        "cc1plus": ([cc1plus, "-fpreprocessed", "x.ii", "-quiet", "-O2", "-o", "x.s"], {},
                    "g++ 12's cc1plus -O2 (C++, 1 thread) on 60 generated template-heavy functions"),
        "sqlite3": (["/usr/bin/sqlite3", ":memory:", ".read s.sql"], {},
                    "sqlite3 (C, 1 thread): 120k inserts, 2 indexes, update, delete, VACUUM"),
        "perl": (["/usr/bin/perl", "h.pl"], {}, "perl 5 (C, 1 thread): 300k hash entries, sort, split"),
        "git-repack": (["git", "-C", "repo.git", "repack", "-adf", "-q", "--threads=2", "--window=250",
                        "--depth=100"], {},
                       "git repack (C, forks pack-objects, which runs 3 threads); the replay is of pack-objects"),
    }


class Lock:
    """Hold the machine's benchmark lock only while timing (other jobs measure too)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        if self.path:
            self.f = open(self.path, "w")
            fcntl.flock(self.f, fcntl.LOCK_EX)

    def __exit__(self, *a):
        if self.path:
            self.f.close()


def run_real(argv, env, cwd, rate=None):
    # Through /usr/bin/time: ru_maxrss keeps the high-water mark of the image
    # before exec, so a child forked from this (40 MiB) Python would never
    # report less than 40 MiB; time's own image is ~2 MiB.
    out = os.path.join(cwd, ".time.out")
    p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", out] + argv, env=env, cwd=cwd,
                       stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("fidelity: %s failed (status %d) with %s" % (argv[0], p.returncode, env.get("LD_PRELOAD", "glibc")))
    wall, user, sys_, rss = open(out).read().split()[-4:]
    r = {"wall_s": float(wall), "cpu_s": float(user) + float(sys_), "maxrss_mib": int(rss) / 1024}
    if rate:
        m = re.search(rate[0], p.stdout)
        if not m:
            sys.exit("fidelity: %s printed no throughput (%r)" % (argv[0], p.stdout[-200:]))
        r["op_ns"] = rate[1](*map(float, m.groups()))
    return r


def env_for(extra, preload, tunables):
    e = dict(os.environ, **extra)
    for k in ("LD_PRELOAD", "GLIBC_TUNABLES"):
        e.pop(k, None)
    if preload:
        e["LD_PRELOAD"] = preload
    if tunables:
        e["GLIBC_TUNABLES"] = tunables
    return e


def trace_and_convert(at, name, argv, extra, work, convert_args):
    tr = os.path.join(work, "tr-" + name)
    shutil.rmtree(tr, ignore_errors=True)
    subprocess.run([at, "record", "-o", tr, "--"] + argv, env=env_for(extra, None, None), cwd=work, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    info = json.loads(subprocess.run([at, "info", "--json", tr], capture_output=True, text=True, check=True).stdout)
    big = max(info["processes"], key=lambda p: sum(p["calls"].values()))
    wl = os.path.join(work, name + ".wl")
    conv = subprocess.run([at, "convert", big["path"], "-o", wl, "--no-progress"] + convert_args,
                          check=True, cwd=work, stderr=subprocess.PIPE, text=True)
    shutil.rmtree(tr)
    return wl, sum(big["calls"].values()), big.get("threads", 1), conv.stderr.splitlines()


def summarize(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--work", default="/tmp/alloctrace-fidelity")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--programs", default="")
    ap.add_argument("--lock", default="/tmp/alloctrace-bench.lock", help="flock file ('' for none)")
    ap.add_argument("--convert-args", default="", help="more arguments for alloctrace convert")
    ap.add_argument("--thirdparty", help="BINDIR of bench/fidelity/thirdparty.sh: add its programs")
    a = ap.parse_args()
    at = os.path.abspath(os.path.join(a.build, "alloctrace"))
    for f in [at] + [c[1] for c in CONFIGS if c[1]]:
        if not os.path.exists(f):
            sys.exit("fidelity: missing %s (build it; scripts/setup-deps.sh)" % f)
    os.makedirs(a.work, exist_ok=True)
    progs = programs(a.work)
    if a.thirdparty:
        progs.update(thirdparty(a.thirdparty))
    if a.programs:
        progs = {k: progs[k] for k in a.programs.split(",")}

    res = {"machine": {"uname": os.uname().release, "nproc": os.cpu_count(), "load_before": os.getloadavg()},
           "runs": a.runs, "programs": {}}
    for name, (argv, extra, desc) in progs.items():
        print("fidelity: %s" % name, file=sys.stderr, flush=True)
        wl, calls, threads, conv_notes = trace_and_convert(at, name, argv, extra, a.work,
                                                           shlex.split(a.convert_args))
        real = {c[0]: [] for c in CONFIGS}
        for r in range(a.runs):  # the lock is taken per round: other jobs measure in between
            with Lock(a.lock):
                order = CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]
                for cname, pre, tun, _ in order:
                    real[cname].append(run_real(argv, env_for(extra, pre, tun), a.work, RATE.get(name)))
        cols = ",".join(c[3] for c in CONFIGS)
        with Lock(a.lock):
            cmp_out = subprocess.run([at, "compare", wl, "--allocators", cols, "--runs", str(a.runs), "--timing",
                                      "off", "--json"], capture_output=True, text=True, check=True).stdout
        cmp = {x["allocator"]: x for x in json.loads(cmp_out)["allocators"]}
        p = {"argv": argv, "env": extra, "description": desc, "calls": calls, "threads": threads,
             "fixed_work": name in FIXED_WORK, "convert": conv_notes, "real": {}, "replay": {}}
        metrics = ("wall_s", "cpu_s", "maxrss_mib") + (("op_ns",) if name in RATE else ())
        for cname, _, _, col in CONFIGS:
            p["real"][cname] = {k: summarize([x[k] for x in real[cname]]) for k in metrics}
            c = cmp[col]
            p["replay"][cname] = {"wall_s": {k: c["wall_ms"][k] / 1e3 for k in ("median", "min", "max")},
                                  "cpu_s": {k: c["thread_cpu_ms"][k] / 1e3 for k in ("median", "min", "max")},
                                  "maxrss_mib": {k: c["max_rss_mib"][k] for k in ("median", "min", "max")}}
            # compare's prediction: the traced program's Max RSS plus the replay's change (its
            # verdict), when the workload knows it; the replay's own Max RSS stays beside it
            v = c.get("verdict", {})
            if v.get("max_rss_basis") == "traced program":
                p["replay"][cname]["replay_maxrss_mib"] = p["replay"][cname]["maxrss_mib"]
                p["replay"][cname]["maxrss_mib"] = {k: v["max_rss_mib"] for k in ("median", "min", "max")}
            if name in RATE:  # the replay makes the traced ops: its time per op follows its wall time
                p["replay"][cname]["op_ns"] = p["replay"][cname]["wall_s"]
        res["programs"][name] = p
        os.unlink(wl)
    res["machine"]["load_after"] = os.getloadavg()
    out = os.path.join(a.work, "fidelity.json")
    if os.path.exists(out):  # a run of some programs adds to an earlier run's table
        old = json.load(open(out))
        old["programs"].update(res["programs"])
        old.setdefault("more_machine", []).append(res["machine"])
        res = old
    json.dump(res, open(out, "w"), indent=1)
    md = table(res)
    open(os.path.join(a.work, "fidelity.md"), "w").write(md)
    print(md)


def table(res):
    L = []
    agree = resolved = within = cells = 0
    misses = []
    L.append("| program | metric | glibc (real) | config | real ratio (min-max) | replay ratio | resolved | agrees "
             "| ratio error |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for name, p in res["programs"].items():
        ms = (("wall_s", "s"), ("cpu_s", "s"), ("maxrss_mib", "MiB"))
        if "op_ns" in p["real"]["glibc"]:  # the program's own time per op replaces wall time
            ms = (("op_ns", "ns"),) + ((("cpu_s", "s"),) if p.get("fixed_work") else ()) + (("maxrss_mib", "MiB"),)
        for m, unit in ms:
            g, rg = p["real"]["glibc"][m], p["replay"]["glibc"][m]
            for cname, _, _, _ in CONFIGS[1:]:
                x, rx = p["real"][cname][m], p["replay"][cname][m]
                rr = x["median"] / g["median"]
                pr = rx["median"] / rg["median"] if rg["median"] else float("nan")
                res_ = x["min"] > g["max"] or x["max"] < g["min"]
                ag = (rr > 1) == (pr > 1)
                err = pr / rr - 1
                cells += 1
                within += abs(err) <= 0.10
                if res_:
                    resolved += 1
                    agree += ag
                    if not ag:
                        misses.append("%s %s %s: real %.2fx, replay %.2fx" % (name, m, cname, rr, pr))
                L.append("| %s | %s | %.3g %s | %s | %.2f (%.2f-%.2f) | %.2f | %s | %s | %+.0f%% |" % (
                    name, m.split("_")[0] if m != "op_ns" else "time/op", g["median"], unit, cname, rr, x["min"] / g["median"],
                    x["max"] / g["median"], pr, "yes" if res_ else "no", ("yes" if ag else "**no**") if res_ else
                    "-", 100 * err))
    L.append("")
    L.append("Resolved by reality: %d of %d cells; direction agrees in %d of them; ratio error <= 10%% in %d of %d "
             "cells." % (resolved, cells, agree, within, cells))
    if misses:
        L.append("")
        L.append("Misses: " + "; ".join(misses) + ".")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
