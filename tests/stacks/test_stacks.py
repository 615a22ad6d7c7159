#!/usr/bin/env python3
"""test_stacks.py - call stacks end to end: `alloctrace record --stacks`
on tests/stacks/stk_prog (a known call tree, see stk_prog.c), then
`alloctrace report --json` / `alloctrace flamegraph`.

cases:
  report      leaks name leaky/shlib_alloc/mod_alloc with exact bytes; the
              top stacks show main->a->b and main->c with exact counts
  flamegraph  folded stacks hold the known paths with exact values
  nostacks    without --stacks: no stack records, report still works
  valgrind    total live at exit equals memcheck's "in use at exit"
  group       report --group function|caller|module on stk_prog: exact self
              and total values of the known call tree
  filters     stk_phases (2 threads, markers): --from/--to (labels and
              seconds), --thread, --function, --module, --suppress
  pids        a trace of 3 processes: busiest first, --pid selects one
  cxx         stk_cxx (C++ -O2 -g: templates, lambdas, std containers, a
              three-level inline chain): every frame of every stack equals
              `addr2line -C -f -i` (function, file, line; whole inline chain);
              --names raw and short

usage: test_stacks.py [--build DIR] [--valgrind PATH] CASE...  (or --list;
       tests/atr_runner.py).  Python 3 standard library only.
"""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import atr_runner  # noqa: E402
from atr_runner import fail  # noqa: E402

C_CALLS = 1000  # STK_C_CALLS in stk_prog.c


def record(build, out, stacks=True, extra=(), argv=None):
    prog = os.path.join(build, "tests", "stacks", "stk_prog")
    mod = os.path.join(build, "tests", "stacks", "stk_module.so")
    cmd = [os.path.join(build, "alloctrace"), "record", "-o", out]
    if stacks:
        cmd.append("--stacks")
    cmd += ["--"] + (argv if argv else [prog, mod] + list(extra))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("record exited %d: %s" % (r.returncode, r.stderr))
    files = [f for f in os.listdir(out) if f.endswith(".atr")]
    if len(files) != 1:
        fail("expected one trace file, got %r" % files)
    return os.path.join(out, files[0])


def report(build, trace, *args):
    r = subprocess.run([os.path.join(build, "alloctrace"), "report", "--json", "--top", "0"]
                       + list(args) + [trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("report exited %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)["processes"][0]


def funcs(stack):
    return [f["function"] for f in stack["frames"]]


def starts_with(stack, names):
    return funcs(stack)[:len(names)] == names


def find(stacks, names, what):
    got = [s for s in stacks if starts_with(s, names)]
    if len(got) != 1:
        fail("%s: expected one stack starting %s, found %d; stacks:\n%s"
             % (what, names, len(got), "\n".join(str(funcs(s)[:6]) for s in stacks)))
    return got[0]


def case_report(args, tmp):
    p = report(args.build, record(args.build, tmp))
    if not p["stacks_recorded"]:
        fail("stacks_recorded is false")
    leaks = p["leaks"]["stacks"]
    for names, size, mod in ((["leaky", "main"], 1234, "stk_prog"),
                             (["shlib_alloc", "main"], 3000, "libstkshared.so"),
                             (["mod_alloc", "main"], 4000, "stk_module.so")):
        s = find(leaks, names, "leaks")
        if s["bytes"] != size or s["blocks"] != 1:
            fail("leak %s: %d bytes in %d blocks, expected %d in 1"
                 % (names[0], s["bytes"], s["blocks"], size))
        fr = s["frames"][0]
        if not (fr["module"] or "").endswith(mod):
            fail("leak %s: module %r, expected ...%s" % (names[0], fr["module"], mod))
        if not fr["file"] or not fr["line"]:
            fail("leak %s: no file:line in %r" % (names[0], fr))
    want = 1234 + 3000 + 4000
    if p["leaks"]["bytes"] < want:
        fail("leaks.bytes %d < %d" % (p["leaks"]["bytes"], want))
    top = p["top_by_calls"]
    sc = find(top, ["c", "main"], "top_by_calls")
    if sc["calls"] != C_CALLS or sc["bytes"] != 64 * C_CALLS or sc["temporary"] != C_CALLS:
        fail("main->c: %r" % {k: sc[k] for k in ("calls", "bytes", "temporary")})
    if top[0] is not sc and top[0]["calls"] > C_CALLS:
        fail("main->c is not the hottest path by calls: %r" % funcs(top[0])[:4])
    sb = find(top, ["b", "a", "main"], "top_by_calls")
    if sb["calls"] != 5 or sb["bytes"] != 500 or sb["leaked_bytes"] != 0:
        fail("main->a->b: %r" % sb)
    f = sb["frames"][0]
    if not f["file"].endswith("stk_prog.c") or f["line"] <= 0:
        fail("b frame: %r" % f)
    if p["temporary"]["count"] < C_CALLS + 5:
        fail("temporary.count %d < %d" % (p["temporary"]["count"], C_CALLS + 5))
    if p["peak_live_bytes"] < want:
        fail("peak_live_bytes %d < %d" % (p["peak_live_bytes"], want))
    if p["calls"]["malloc"] < C_CALLS + 5 + 3:
        fail("malloc calls %d" % p["calls"]["malloc"])
    # --by orders the "top" list
    atr = [f for f in os.listdir(tmp) if f.endswith(".atr")][0]  # not DIR/<pid>.rss
    p2 = report(args.build, os.path.join(tmp, atr), "--by", "leaked")
    vals = [s["leaked_bytes"] for s in p2["top"]]
    if p2["top_by"] != "leaked" or vals != sorted(vals, reverse=True):
        fail("--by leaked: %r" % vals)


def case_flamegraph(args, tmp):
    trace = record(args.build, tmp)
    r = subprocess.run([os.path.join(args.build, "alloctrace"), "flamegraph", "--by", "calls",
                        trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("flamegraph exited %d: %s" % (r.returncode, r.stderr))
    lines = r.stdout.splitlines()
    got = {}
    for l in lines:
        m = re.fullmatch(r"(\S+) (\d+)", l)
        if not m:
            fail("not a folded line: %r" % l)
        got[m.group(1)] = int(m.group(2))
    c = [k for k in got if k.endswith(";main;c")]
    b = [k for k in got if k.endswith(";main;a;b")]
    if len(c) != 1 or got[c[0]] != C_CALLS:
        fail("main;c: %r" % {k: got[k] for k in c})
    if len(b) != 1 or got[b[0]] != 5:
        fail("main;a;b: %r" % {k: got[k] for k in b})
    if not c[0].startswith("stk_prog;"):
        fail("root frame is not the program: %r" % c[0])
    # the standalone SVG: well-formed, the same numbers in its tooltips
    import xml.etree.ElementTree as ET
    svg = tmp + ".svg"
    r = subprocess.run([os.path.join(args.build, "alloctrace"), "flamegraph", "--by", "calls",
                        "--svg", svg, trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("flamegraph --svg exited %d: %s" % (r.returncode, r.stderr))
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in ET.parse(svg).getroot().iter(ns + "title")]
    want_c = "c (%d calls," % C_CALLS
    if not any(t.startswith(want_c) for t in titles):
        fail("no frame %r in the SVG: %r" % (want_c, titles[:20]))
    total = sum(int(l.rsplit(' ', 1)[1]) for l in lines)  # keys may repeat
    if not any(t.startswith("stk_prog (%d calls, 100.00%%)" % total) for t in titles):
        fail("root frame of the SVG does not hold all %d calls" % total)


def case_nostacks(args, tmp):
    trace = record(args.build, tmp, stacks=False)
    p = report(args.build, trace)
    if p["stacks_recorded"] or p["distinct_stacks"] != 0:
        fail("stacks without --stacks: %r" % p["distinct_stacks"])
    if len(p["top"]) != 1 or p["top"][0]["frames"] != [] or p["top"][0]["stack_id"] != 0:
        fail("without stacks everything is stack 0: %r" % p["top"])
    if p["leaks"]["bytes"] < 1234 + 3000 + 4000:
        fail("leaks.bytes %d" % p["leaks"]["bytes"])


def case_diff(args, tmp):
    """Two runs, main -> c -> malloc(64) 1000 vs 1500 times: diff matches
    stacks by function names and shows exactly that change."""
    old = record(args.build, tmp + "-old")
    new = record(args.build, tmp + "-new", extra=["1500"])
    a = os.path.join(args.build, "alloctrace")
    out = {}
    for by in ("calls", "bytes"):
        r = subprocess.run([a, "diff", "--json", "--by", by, old, new],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail("diff exited %d: %s" % (r.returncode, r.stderr))
        out[by] = json.loads(r.stdout)
    for by, want in (("calls", 500), ("bytes", 500 * 64)):
        st = out[by]["stacks"]
        if len(st) != 1:
            fail("diff --by %s: expected exactly one changed stack, got %r" % (by, st))
        names = st[0]["stack"].split(";")
        if "c" not in names or "main" not in names or names.index("main") > names.index("c"):
            fail("diff --by %s: changed stack is not main -> c: %s" % (by, st[0]["stack"]))
        if st[0]["delta"] != want or st[0]["new"] - st[0]["old"] != want:
            fail("diff --by %s: delta %d, want %d" % (by, st[0]["delta"], want))
    t = out["calls"]["totals"]["calls"]
    if t["delta"] != 1000:  # 500 mallocs + 500 frees
        fail("total calls delta %d, want 1000" % t["delta"])
    r = subprocess.run([a, "diff", old, new], capture_output=True, text=True, timeout=60)
    # 500 more times 64 bytes, in aligned columns, innermost frame first
    line = [l for l in r.stdout.splitlines() if " c <- main" in l]
    if r.returncode != 0 or len(line) != 1 or line[0].split()[:3] != ["+31.2", "KiB", "62.5"]:
        fail("text diff: %s %s" % (r.stdout, r.stderr))


def case_valgrind(args, tmp, argv=None):
    prog = os.path.join(args.build, "tests", "stacks", "stk_prog")
    mod = os.path.join(args.build, "tests", "stacks", "stk_module.so")
    argv = argv or [prog, mod]
    p = report(args.build, record(args.build, tmp, argv=argv))
    # --run-libc-freeres=no: glibc's exit-time cleanup is a valgrind-only
    # step; the recorded program never runs it (docs/REPORT.md)
    r = subprocess.run([args.valgrind, "--run-libc-freeres=no", "--leak-check=no"] + argv,
                       capture_output=True, text=True, timeout=100)
    if r.returncode != 0:
        fail("valgrind exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    m = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", r.stderr)
    if not m:
        fail("no 'in use at exit' line in valgrind's output:\n" + r.stderr[-2000:])
    vb, vn = (int(x.replace(",", "")) for x in m.groups())
    ab, an = p["leaks"]["bytes"], p["leaks"]["blocks"]
    print("valgrind: %d bytes in %d blocks; alloctrace: %d bytes in %d blocks" % (vb, vn, ab, an))
    if (vb, vn) != (ab, an):
        fail("live at exit differs: valgrind %d bytes in %d blocks, alloctrace %d in %d"
             % (vb, vn, ab, an))


def case_valgrind2(args, tmp):
    """The second program: every malloc-family function, realloc chains,
    a list freed in part, mmapped blocks (tests/stacks/stk_leaks.c)."""
    argv = [os.path.join(args.build, "tests", "stacks", "stk_leaks")]
    case_valgrind(args, tmp, argv)
    # by hand: everything kept is live at the end, and that is the peak:
    # 200 nodes x 48 + 50 + 91 + 1000 + 512 + 77 + 99 + 11 + 200000; the
    # temporaries: valloc+free, malloc(100000)+free, and the list's head
    # (the last node allocated is the first freed, nothing in between)
    p = report(args.build, record(args.build, tmp + "-2", argv=argv))
    if p["peak_live_bytes"] != 211440:
        fail("peak_live_bytes %d, expected 211440" % p["peak_live_bytes"])
    if p["temporary"]["count"] != 3:
        fail("temporary %d, expected 3" % p["temporary"]["count"])


def rows(p, key="function"):
    return {r[key]: r for r in p["groups"]["rows"]}


def case_group(args, tmp):
    trace = record(args.build, tmp)
    p = report(args.build, trace, "--group", "function")
    g = p["groups"]
    if g["group"] != "function" or g["by"] != "calls":
        fail("groups header: %r" % {k: g[k] for k in ("group", "by")})
    r = rows(p)
    want_self = {"b": (5, 500, 0), "c": (C_CALLS, 64 * C_CALLS, 0), "leaky": (1, 1234, 1234),
                 "shlib_alloc": (1, 3000, 3000), "mod_alloc": (1, 4000, 4000)}
    for fn, (calls, nbytes, leaked) in want_self.items():
        if fn not in r:
            fail("no row for %s: %r" % (fn, sorted(r)))
        v = r[fn]["self"]
        if (v["calls"], v["bytes"], v["leaked_bytes"]) != (calls, nbytes, leaked):
            fail("%s self %r, expected calls %d bytes %d leaked %d" % (fn, v, calls, nbytes, leaked))
    if r["a"]["self"]["calls"] != 0 or r["a"]["total"]["calls"] != 5:
        fail("a: self %r total %r" % (r["a"]["self"], r["a"]["total"]))
    m = r["main"]["total"]
    if m["calls"] < C_CALLS + 8 or m["leaked_bytes"] < 1234 + 3000 + 4000:
        fail("main total %r" % m)
    # self adds up to the process totals: every allocation has one allocating function
    if sum(x["self"]["calls"] for x in r.values()) != p["total_calls"] - p["calls"]["free"]:
        fail("self calls add up to %d, allocation calls %d"
             % (sum(x["self"]["calls"] for x in r.values()), p["total_calls"] - p["calls"]["free"]))
    if sum(x["self"]["peak_bytes"] for x in r.values()) != p["peak_live_bytes"]:
        fail("self peak adds up to %d, peak %d"
             % (sum(x["self"]["peak_bytes"] for x in r.values()), p["peak_live_bytes"]))
    ranked = [x["self"]["calls"] for x in g["rows"]]
    if ranked[0] != C_CALLS or g["rows"][0]["function"] != "c":
        fail("c is not first by calls: %r" % g["rows"][:2])
    if not r["b"]["file"].endswith("stk_prog.c") or not r["b"]["line"]:
        fail("b: %r" % r["b"])
    # --module: the stacks through a module
    p = report(args.build, trace, "--group", "function", "--module", "libstkshared.so")
    if p["total_calls"] != 1 or list(rows(p)) != ["shlib_alloc"] and "shlib_alloc" not in rows(p):
        fail("--module libstkshared.so: %d calls, %r" % (p["total_calls"], list(rows(p))))
    # callers
    p = report(args.build, trace, "--group", "caller")
    r = rows(p)
    if [c["function"] for c in r["b"]["callers"]] != ["a"] or r["b"]["callers"][0]["self"]["calls"] != 5:
        fail("callers of b: %r" % r["b"]["callers"])
    if [c["function"] for c in r["c"]["callers"]] != ["main"]:
        fail("callers of c: %r" % r["c"]["callers"])
    # modules, ordered by leaks
    p = report(args.build, trace, "--group", "module", "--by", "leaked")
    r = rows(p, "module")
    for mod, leaked in (("stk_module.so", 4000), ("libstkshared.so", 3000)):
        if r.get(mod, {}).get("self", {}).get("leaked_bytes") != leaked:
            fail("module %s: %r" % (mod, r.get(mod)))
    if r["stk_prog"]["self"]["leaked_bytes"] != 1234 or r["stk_prog"]["total"]["leaked_bytes"] < 8234:
        fail("module stk_prog: %r" % r["stk_prog"])
    # text: one line per function, human units
    t = subprocess.run([os.path.join(args.build, "alloctrace"), "report", "--group", "function",
                        "--top", "3", trace], capture_output=True, text=True, timeout=60)
    if t.returncode != 0 or "allocating functions by calls" not in t.stdout or "62.5 KiB" not in t.stdout:
        fail("text --group function:\n" + t.stdout + t.stderr)


def phases(args, tmp):
    prog = os.path.join(args.build, "tests", "stacks", "stk_phases")
    return record(args.build, tmp, argv=[prog])


def self_calls(p, fn):
    r = rows(p)
    return r[fn]["self"]["calls"] if fn in r else 0


def case_filters(args, tmp):
    trace = phases(args, tmp)
    full = report(args.build, trace, "--group", "function")
    for fn, n in (("p1", 10), ("worker", 20), ("p3", 30), ("p4", 5)):
        if self_calls(full, fn) != n:
            fail("unfiltered %s: %d calls, expected %d" % (fn, self_calls(full, fn), n))
    # a window between two markers: leaks are what is live at its end
    p = report(args.build, trace, "--group", "function", "--from", "phase 2", "--to", "end")
    got = {fn: self_calls(p, fn) for fn in ("p1", "worker", "p3", "p4")}
    if got != {"p1": 0, "worker": 20, "p3": 30, "p4": 0}:
        fail("--from 'phase 2' --to end: %r" % got)
    if rows(p)["p3"]["self"]["leaked_bytes"] != 9000 or "p1" in rows(p):
        fail("--from/--to leaks: %r" % rows(p).get("p3"))
    if not 20 <= p["calls"]["free"] <= p["total_calls"] - p["calls"]["free"]:
        # the worker's 20, and what pthread_create/join free of their own
        fail("--from/--to: %d frees counted" % p["calls"]["free"])
    if p["filtered_out_calls"] < 10:  # p1 (the pass ends at --to)
        fail("filtered_out_calls %d" % p["filtered_out_calls"])
    # seconds: nothing after a huge --from, everything up to a huge --to
    p = report(args.build, trace, "--from", "1e6")
    if p["total_calls"] != 0:
        fail("--from 1e6: %d calls" % p["total_calls"])
    p = report(args.build, trace, "--from", "0", "--to", "1e6", "--group", "function")
    if {fn: self_calls(p, fn) for fn in ("p1", "p4")} != {"p1": 10, "p4": 5}:
        fail("--from 0 --to 1e6 lost calls")
    # thread: the worker is thread T2
    p = report(args.build, trace, "--group", "function", "--thread", "T2")
    got = {fn: self_calls(p, fn) for fn in ("p1", "worker", "p3")}
    if got != {"p1": 0, "worker": 20, "p3": 0} or p["leaks"]["bytes"] != 0:
        fail("--thread T2: %r, leaks %d" % (got, p["leaks"]["bytes"]))
    tid = [t["tid"] for t in full["thread_stats"] if t["serial"] == 2][0]
    p2 = report(args.build, trace, "--group", "function", "--thread", str(tid))
    if rows(p2).keys() != rows(p).keys():
        fail("--thread %d differs from --thread T2" % tid)
    # function regex and module
    p = report(args.build, trace, "--function", "^p[34]$")
    if p["total_calls"] != 35 or p["leaks"]["bytes"] != 30 * 300 + 5 * 50:
        fail("--function '^p[34]$': %d calls, %d leaked" % (p["total_calls"], p["leaks"]["bytes"]))
    p = report(args.build, trace, "--module", "libnothing.so")
    if p["total_calls"] != 0:
        fail("--module libnothing.so: %d calls" % p["total_calls"])
    p = report(args.build, trace, "--module", "stk_phases")
    if p["total_calls"] < 65:
        fail("--module stk_phases: %d calls" % p["total_calls"])
    # suppressions
    supp = os.path.join(os.path.dirname(tmp), "supp.txt")
    with open(supp, "w") as f:
        f.write("# comment\n\nleak:^p3$\np4\n")
    p = report(args.build, trace, "--suppress", supp)
    lk = p["leaks"]
    if lk["suppressed_bytes"] != 9000 + 250 or lk["suppressed_blocks"] != 35:
        fail("--suppress: %r" % {k: lk[k] for k in ("suppressed_bytes", "suppressed_blocks")})
    names = {funcs(s)[0] for s in lk["stacks"]}
    if "p3" in names or "p4" in names or "p1" not in names:
        fail("--suppress: leak stacks %r" % names)
    with open(supp, "w") as f:
        f.write("called_from_lib:foo\n")
    r = subprocess.run([os.path.join(args.build, "alloctrace"), "report", "--suppress", supp, trace],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 2 or "only \"leak:\"" not in r.stderr:
        fail("a bad suppression file: exit %d %s" % (r.returncode, r.stderr))
    # the same filters in flamegraph
    r = subprocess.run([os.path.join(args.build, "alloctrace"), "flamegraph", "--by", "calls",
                        "--thread", "T2", trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or "worker" not in r.stdout or ";p1" in r.stdout:
        fail("flamegraph --thread T2:\n" + r.stdout + r.stderr)


def case_pids(args, tmp):
    prog = os.path.join(args.build, "tests", "stacks", "stk_prog")
    mod = os.path.join(args.build, "tests", "stacks", "stk_module.so")
    cmd = [os.path.join(args.build, "alloctrace"), "record", "-o", tmp, "--stacks", "--",
           "/bin/sh", "-c", "%s %s 10; %s %s 2000; true" % (prog, mod, prog, mod)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("record: " + r.stderr)
    out = subprocess.run([os.path.join(args.build, "alloctrace"), "report", "--json", tmp],
                         capture_output=True, text=True, timeout=60)
    ps = json.loads(out.stdout)["processes"]
    if len(ps) < 3:
        fail("%d processes, expected sh and two stk_prog" % len(ps))
    calls = [p["total_calls"] for p in ps]
    if calls != sorted(calls, reverse=True) or calls[0] < 4000:
        fail("not the busiest first: %r" % calls)
    pid = ps[1]["pid"]
    one = report(args.build, tmp, "--pid", str(pid))
    if one["pid"] != pid or one["total_calls"] != ps[1]["total_calls"]:
        fail("--pid %d gave %d" % (pid, one["pid"]))
    r = subprocess.run([os.path.join(args.build, "alloctrace"), "report", "--pid", "1", tmp],
                       capture_output=True, text=True, timeout=60)
    if r.returncode == 0 or "no trace of process 1" not in r.stderr:
        fail("--pid 1: exit %d %s" % (r.returncode, r.stderr))


def addr2line(mod, offset):
    """[(function, file, line)] of `addr2line -C -f -i` at a return address
    (the call is at offset - 1, as alloctrace resolves it)."""
    r = subprocess.run(["addr2line", "-C", "-f", "-i", "-e", mod, hex(offset - 1)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("addr2line failed: %s" % r.stderr)
    o = r.stdout.splitlines()
    out = []
    for i in range(0, len(o) - 1, 2):
        loc = o[i + 1].split(" (discriminator")[0]
        if loc.startswith("(inlined by) "):
            loc = loc[len("(inlined by) "):]
        f, _, line = loc.rpartition(":")
        out.append((None if o[i] == "??" else o[i], None if f == "??" else f,
                    None if line in ("0", "?") else int(line)))
    return out


def by_address(stacks):
    """{(module, offset): [(function, file, line) innermost first]}."""
    got = {}
    for st in stacks:
        cur = None
        for fr in st["frames"]:
            key = (fr["module"], int(fr["offset"], 16))
            if cur is None:
                cur = key
                chain = []
            if key != cur:
                fail("frames of one address interleaved: %r" % st["frames"])
            chain.append((fr["function"], fr["file"], fr["line"]))
            if not fr["inlined"]:
                if key in got and got[key] != chain:
                    fail("address %r resolved two ways" % (key,))
                got[key] = chain
                cur = None
    return got


def case_cxx(args, tmp):
    prog = os.path.join(args.build, "tests", "stacks", "stk_cxx")
    trace = record(args.build, tmp, argv=[prog, "50"])
    p = report(args.build, trace)
    stacks = p["top"] + p["leaks"]["stacks"]
    frames = by_address(stacks)
    mine = [k for k in frames if k[0] and os.path.samefile(k[0], prog)]
    if len(mine) < 10:
        fail("only %d addresses in stk_cxx" % len(mine))
    deepest = max(len(frames[k]) for k in mine)
    if deepest < 5:
        fail("longest inline chain in stk_cxx is %d frames, expected >= 5" % deepest)
    checked = 0
    for (mod, off), chain in sorted(frames.items(), key=lambda kv: str(kv[0])):
        if not mod:
            continue
        want = addr2line(mod, off)
        if (mod, off) not in mine:
            # binutils 2.40 names the wrong file for some of glibc's DWARF 5
            # units (libc_start_call_main.h:58 shown as libc-start.c:58,
            # elfutils agrees with us): outside the test program compare
            # functions and lines
            want = [(f, None, l) for f, _, l in want]
            chain = [(f, None, l) for f, _, l in chain]
        if want != chain:
            fail("%s+0x%x:\n  alloctrace %r\n  addr2line  %r" % (mod, off, chain, want))
        checked += 1
    names = [f for c in frames.values() for f, _, _ in c]
    for want in ("app::build(int)", "app::Pool<long>::outer(long)",
                 "app::Pool<long>::middle(long)", "app::Pool<long>::inner(long)",
                 "app::with_lambda(int)", "operator new(unsigned long)"):
        if want not in names:
            fail("no frame named %r" % want)
    if not any(n and n.startswith("std::map<int,") and "::operator[]" in n for n in names):
        fail("std::map<int, ...>::operator[] not among the frames")
    raw = report(args.build, trace, "--names", "raw")
    rn = [f["function"] for s in raw["top"] for f in s["frames"]]
    if "_ZN3app5buildEi" not in rn or "_Znwm" not in rn:
        fail("--names raw: mangled names missing: %r" % sorted(set(rn))[:20])
    short = report(args.build, trace, "--names", "short")
    sn = [f["function"] for s in short["top"] for f in s["frames"]]
    if "std::vector<>::push_back(long const&)" not in sn or any("<long" in (n or "") for n in sn):
        fail("--names short: %r" % sorted(set(sn)))
    print("%d addresses equal addr2line's, inline chains up to %d frames" % (checked, deepest))


CASES = {"cxx": case_cxx, "group": case_group, "filters": case_filters, "pids": case_pids,
         "report": case_report, "valgrind2": case_valgrind2, "diff": case_diff, "flamegraph": case_flamegraph, "nostacks": case_nostacks,
         "valgrind": case_valgrind}


if __name__ == "__main__":
    # each case(args, out): args.build, args.valgrind; out a path in a fresh directory
    sys.exit(atr_runner.main(
        CASES, __doc__, call=lambda fn, c: fn(c.args, os.path.join(c.tmp, "out")),
        options=lambda ap: ap.add_argument("--valgrind", default="valgrind"),
        tmp_prefix="atr-stacks."))
