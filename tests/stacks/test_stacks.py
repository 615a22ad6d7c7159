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

usage: test_stacks.py --build DIR [--valgrind PATH] CASE
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

C_CALLS = 1000  # STK_C_CALLS in stk_prog.c


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


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
    if r.returncode != 0 or "+32,000" not in r.stdout.replace("+32000", "+32,000"):
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


CASES = {"report": case_report, "valgrind2": case_valgrind2, "diff": case_diff, "flamegraph": case_flamegraph, "nostacks": case_nostacks,
         "valgrind": case_valgrind}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory(prefix="atr-stacks.") as tmp:
        out = os.path.join(tmp, "out")
        CASES[args.case](args, out)
    print("ok: " + args.case)


if __name__ == "__main__":
    main()
