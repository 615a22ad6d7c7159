#!/usr/bin/env python3
"""dj/malloc compatibility (docs/DJ_COMPAT.md), end to end.

Files come from tests/dj/djgen.py (a generator written from dj's sources,
independent of alloctrace's C code):
  trace      dj traces -> trace2wl / convert -> replay: every call, real
             tids, inversions fixed, ideal RSS exact
  workload   dj workloads -> trace_run: dj's 13 lines, allocbench's
             line-index parse, replay counts equal the file's ops
  errors     truncated and foreign files: a clear message, exit 1
  export     export --format dj-wl / dj-trace, read back by djgen.py's
             decoders (dj's rules: counts, syncs inside dj's arrays, no
             unsynchronised cross-thread use) and by alloctrace itself

usage: test_dj.py [--build DIR] CASE...  (or --list; tests/atr_runner.py)
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import atr_runner  # noqa: E402
import djgen  # noqa: E402

# allocbench's dj_trace benchmark (src/benchmarks/dj_trace.py), re-typed:
# it parses trace_run's stdout by line index.
COMMA_SEP_NUMBER_RE = "(?:\\d*(?:,\\d*)?)*"
RSS_RE = f"(?P<rss>{COMMA_SEP_NUMBER_RE})"
TIME_RE = f"(?P<time>{COMMA_SEP_NUMBER_RE})"
CYCLES_RE = re.compile(f"^{TIME_RE} cycles$")
CPU_TIME_RE = re.compile(f"^{TIME_RE} usec across.*threads$")
MAX_RSS_RE = re.compile(f"^{RSS_RE} Kb Max RSS")
IDEAL_RSS_RE = re.compile(f"^{RSS_RE} Kb Max Ideal RSS")
MALLOC_RE = re.compile(f"^Avg malloc time:\\s*{TIME_RE} in.*calls$")
CALLOC_RE = re.compile(f"^Avg calloc time:\\s*{TIME_RE} in.*calls$")
REALLOC_RE = re.compile(f"^Avg realloc time:\\s*{TIME_RE} in.*calls$")
FREE_RE = re.compile(f"^Avg free time:\\s*{TIME_RE} in.*calls$")


def allocbench_parse(stdout):
    def to_int(s):
        return int(s.replace(",", ""))
    result = {}
    regexs = {7: MALLOC_RE, 8: CALLOC_RE, 9: REALLOC_RE, 10: FREE_RE}
    functions = {7: "malloc", 8: "calloc", 9: "realloc", 10: "free"}
    for i, line in enumerate(stdout.splitlines()):
        if i == 0:
            result["cycles"] = to_int(CYCLES_RE.match(line).group("time"))
        elif i == 2:
            result["cputime"] = to_int(CPU_TIME_RE.match(line).group("time"))
        elif i == 3:
            result["Max_RSS"] = to_int(MAX_RSS_RE.match(line).group("rss"))
        elif i == 4:
            result["ideal_rss"] = to_int(IDEAL_RSS_RE.match(line).group("rss"))
        elif i in [7, 8, 9, 10]:
            res = regexs[i].match(line)
            result["avg_" + functions[i]] = to_int(res.group("time"))
    return result


# dj's 13 lines, each exactly (numbers with dj's commas, dj's widths)
NUM = r"-?[0-9]{1,3}(?:,[0-9]{3})*"
LAYOUT = [
    rf"^{NUM} cycles$",
    rf"^{NUM} usec wall time$",
    rf"^{NUM} usec across \d+ threads?$",
    rf"^{NUM} Kb Max RSS \({NUM} -> {NUM}\)$",
    rf"^{NUM} Kb Max Ideal RSS$",
    r"^$",
    r"^sizeof ticks_t is 8$",
    r"^Avg malloc time: [ 0-9,]{6,} in [ 0-9,]{10,} calls$",
    r"^Avg calloc time: [ 0-9,]{6,} in [ 0-9,]{10,} calls$",
    r"^Avg realloc time: [ 0-9,]{5,} in [ 0-9,]{10,} calls$",
    r"^Avg free time: [ 0-9,]{8,} in [ 0-9,]{10,} calls$",
    rf"^Total call time: {NUM} cycles$",
    r"^$",
]

FAILS = 0


def check(cond, what):
    global FAILS
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS += 1


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def counts_of(alloctrace, wl):
    p = run([alloctrace, "replay", "--timing", "off", "--json", wl])
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    return {k: v["count"] for k, v in d["calls"].items()}, d


def test_trace(a, tmp):
    tl = os.path.join(tmp, "trace2wl")
    os.symlink(a, tl)
    for seed in (1, 2, 3):
        tr = os.path.join(tmp, f"mtrace.out.{seed}")
        data, exp = djgen.gen_trace(seed)
        open(tr, "wb").write(data)
        wl = os.path.join(tmp, f"t{seed}.wl")
        p = run([tl, wl, tr])
        check(p.returncode == 0, f"trace2wl reads a dj trace (seed {seed}): {p.stderr.strip()[:200]}")
        check("anomalies" not in p.stderr, f"no anomalies left (seed {seed})")
        m = re.search(r"(\d+) inversions fixed.*?, (\d+) left, (\d+) reallocs merged", p.stderr)
        check(m and int(m.group(1)) >= exp["inversions"] and m.group(2) == "0" and m.group(3) == "1",
              f"inversions fixed ({exp['inversions']} made by the generator), m_f realloc merged")
        check(f"{exp['threads']} threads" in p.stderr,
              f"{exp['threads']} threads by real tid (dj's trace2wl merges 4000/4001/4002)")
        got, d = counts_of(a, wl)
        want = exp["calls"]
        check(all(got[k] == want[k] for k in want if k != "total"),
              f"replay counts equal the trace's calls: {got} vs {want}")
        check(d["ideal_rss_peak_bytes"] == exp["ideal_peak"],
              f"ideal RSS {d['ideal_rss_peak_bytes']} == true peak {exp['ideal_peak']}")
    # a truncated trace: the partial record is ignored and said so
    cut = os.path.join(tmp, "cut.dj")
    open(cut, "wb").write(open(tr, "rb").read()[:64 * 500 + 17])
    p = run([a, "convert", cut, "-o", os.path.join(tmp, "cut.wl")])
    check(p.returncode == 0 and "17 trailing bytes ignored" in p.stderr,
          "a trace cut inside a record: converted, the partial record reported")


def test_workload(a, tmp):
    tr = os.path.join(tmp, "trace_run")
    os.symlink(a, tr)
    for seed in (1, 2):
        wlp = os.path.join(tmp, f"dj{seed}.wl")
        data, exp = djgen.gen_workload(seed)
        open(wlp, "wb").write(data)
        dec = djgen.decode_wl(data)
        check(dec["races"] > 0, f"the generator left dj's races in (seed {seed}: {dec['races']})")
        p = run([tr, "--timing", "fast", wlp])
        check(p.returncode == 0, f"trace_run runs a dj workload: {p.stderr.strip()[:300]}")
        lines = p.stdout.split("\n")
        check(p.stdout.endswith("\n") and len(lines) == 14 and lines[-1] == "",
              f"exactly 13 lines on stdout (got {len(lines) - 1})")
        check(all(re.match(LAYOUT[i], lines[i]) for i in range(min(13, len(lines)))),
              "each line in dj's layout:\n" + p.stdout)
        try:
            r = allocbench_parse(p.stdout)
            ok = set(r) == {"cycles", "cputime", "Max_RSS", "ideal_rss", "avg_malloc", "avg_calloc",
                            "avg_realloc", "avg_free"}
        except AttributeError as e:
            ok, r = False, str(e)
        check(ok, f"allocbench's line-index parse: {r}")
        calls = {m.group(1): int(m.group(2).replace(",", "")) for m in
                 re.finditer(r"^Avg (\w+) time: +[0-9,]+ in +([0-9,]+) calls$", p.stdout, re.M)}
        want = exp["calls"]
        check(calls == {"malloc": want["malloc"] + want["memalign"], "calloc": want["calloc"],
                        "realloc": want["realloc"], "free": want["free"]},
              f"trace_run's counts equal the file's ops (memalign as malloc): {calls} vs {want}")
        got, d = counts_of(a, wlp)
        check(all(got[k] == dec["calls"][k] for k in ("malloc", "calloc", "realloc", "free", "memalign")),
              f"replay counts equal the file's ops: {got} vs {dec['calls']}")
        check(d["waits"] >= 0, "replay finished")
    # alloctrace replay keeps its own layout
    p = run([a, "replay", "--timing", "off", wlp])
    check(p.returncode == 0 and p.stdout.startswith("replay ") and "p99" in p.stdout,
          "alloctrace replay keeps its richer layout")
    p = run([tr, "--extras", "--timing", "off", wlp])
    check(len(p.stdout.split("\n")) == 14 and "p99" in p.stderr, "--extras: alloctrace's report on stderr")


def test_errors(a, tmp):
    tr = os.path.join(tmp, "trace_run")
    data, _ = djgen.gen_workload(5)
    cases = {
        "truncated": data[:len(data) // 2],
        "header only": data[:12],
        "bad varint": data[:20] + bytes([0xff] * 12) + data[32:],
        "offset past end": bytes([8, 5, 9, 1, 10, 1, 11, 0xff, 0x7f, 1]),
        "pointer index past end": bytes([8, 2, 9, 1, 10, 1, 11, 7, 1, 2, 9, 4, 1]),
        "sync never written": bytes([8, 2, 9, 3, 10, 1, 11, 7, 1, 7, 2, 1]),
        "text": b"hello world\n",
        "empty": b"",
    }
    for name, body in cases.items():
        f = os.path.join(tmp, "bad.wl")
        open(f, "wb").write(body)
        p = run([tr, f])
        check(p.returncode == 1 and p.stdout == "" and ("dj" in p.stderr or "empty" in p.stderr),
              f"{name}: exit 1, a message: {p.stderr.strip()}")
    tr_file = os.path.join(tmp, "x.dj")
    open(tr_file, "wb").write(djgen.gen_trace(9, 50)[0])
    p = run([tr, tr_file])
    check(p.returncode == 1 and "trace2wl" in p.stderr, f"a dj trace given to trace_run: {p.stderr.strip()}")


def find(build, name, under=""):
    """build/NAME (every target lands there), else the first NAME below a
    directory whose path holds `under`."""
    top = os.path.join(build, name)
    if os.path.isfile(top):
        return top
    for dirpath, _, files in os.walk(build):
        if name in files and under in os.path.relpath(dirpath, build):
            return os.path.join(dirpath, name)
    return None


def test_export(a, tmp, build):
    progs = [("threads", find(build, "threads", "progs")), ("djprog", find(build, "djprog", "dj"))]
    for name, prog in progs:
        if not prog:
            check(False, f"export test needs {name} in {build}")
            continue
        export_one(a, tmp, name, prog)


def export_one(a, tmp, name, prog):
    tdir = os.path.join(tmp, name + ".rec")
    p = run([a, "record", "-o", tdir, "--", prog])
    check(p.returncode == 0, f"record {name}: {p.stderr.strip()[:200]}")
    awl = os.path.join(tmp, name + ".wl")
    run([a, "convert", "-q", tdir, "-o", awl])
    ref, _ = counts_of(a, awl)
    # dj-wl
    djwl = os.path.join(tmp, name + ".djwl")
    p = run([a, "export", "--format", "dj-wl", "-o", djwl, tdir])
    check(p.returncode == 0, f"{name}: export --format dj-wl: {p.stderr.strip()[:300]}")
    dec = djgen.decode_wl(open(djwl, "rb").read())
    djc = dec["calls"]
    check(dec["races"] == 0, f"{name}: dj-wl: no unsynchronised cross-thread use under dj's rules")
    check(dec["syncs_outside_array"] == 0, f"{name}: dj-wl: every sync id inside dj's arrays")
    check(djc["malloc"] == ref["malloc"] and djc["calloc"] == ref["calloc"] and
          djc["free"] == ref["free"] and djc["realloc"] == ref["realloc"] + ref["reallocarray"] and
          djc["memalign"] == ref["memalign"] + ref["posix_memalign"] + ref["aligned_alloc"] +
          ref["valloc"] + ref["pvalloc"] and djc["valloc"] == 0 and djc["pvalloc"] == 0,
          f"{name}: dj-wl: the same calls in dj's op set {djc} vs {ref}")
    p = run([a, "export", "--format", "dj-wl", "-o", djwl + "2", awl])
    check(p.returncode == 0 and open(djwl, "rb").read() == open(djwl + "2", "rb").read(),
          f"{name}: dj-wl from the alloctrace workload: the same file")
    back, _ = counts_of(a, djwl)
    check(back["free"] == ref["free"] and sum(back.values()) == sum(ref.values()),
          f"{name}: dj-wl read back by replay: {back}")
    # dj-trace
    djtr = os.path.join(tmp, name + ".djtrace")
    p = run([a, "export", "--format", "dj-trace", "-o", djtr, tdir])
    check(p.returncode == 0, f"{name}: export --format dj-trace: {p.stderr.strip()[:300]}")
    data = open(djtr, "rb").read()
    dt = djgen.decode_trace(data)
    hints = int(re.search(r"(\d+) ownership hints", p.stderr).group(1))
    check(dt["calls"]["total"] == sum(ref.values()) + hints,
          f"{name}: dj-trace: every call a record, plus {hints} hints")
    check(dt["dj_threads"] == dt["threads"], f"{name}: dj-trace: threads apart under dj's tid >> 3 hash")
    fromdj = djgen.decode_wl(djgen.dj_trace2wl(data))
    check(fromdj["calls"]["total"] == sum(ref.values()) and fromdj["races"] == 0,
          f"{name}: dj's trace2wl (re-typed) makes the same calls without races: {fromdj}")
    wl2 = os.path.join(tmp, name + ".back.wl")
    p = run([a, "convert", djtr, "-o", wl2])
    check(p.returncode == 0 and "written by alloctrace export" in p.stderr and
          f"{hints} ownership hints skipped" in p.stderr, f"{name}: dj-trace read back by convert")
    back, _ = counts_of(a, wl2)
    check(sum(back.values()) == sum(ref.values()) and back["free"] == ref["free"] and
          back["realloc"] == ref["realloc"] + ref["reallocarray"],
          f"{name}: dj-trace round trip: same calls {back} vs {ref}")


def run_case(fn, c):
    """a case checks on (check() prints each); any failed check fails it"""
    global FAILS
    FAILS = 0
    fn(c)
    if FAILS:
        atr_runner.fail("%d check(s) failed" % FAILS)


def case_errors(c):
    os.symlink(c.alloctrace, os.path.join(c.tmp, "trace_run"))
    test_errors(c.alloctrace, c.tmp)


CASES = {"trace": lambda c: test_trace(c.alloctrace, c.tmp),
         "workload": lambda c: test_workload(c.alloctrace, c.tmp),
         "errors": case_errors,
         "export": lambda c: test_export(c.alloctrace, c.tmp, c.build)}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=run_case, tmp_prefix="atr-dj-"))
