#!/usr/bin/env python3
"""`alloctrace arenas --json` against glibc's own malloc_info XML.

usage: test_arenas.py [--build DIR] CASE...  (timing, plain, xfree; or --list: tests/atr_runner.py)

arena_prog (tests/arenas/arena_prog.c) runs under `alloctrace record` with
GLIBC_TUNABLES=glibc.malloc.arena_max=3 and 6 threads alive at once, so
glibc makes exactly 3 arenas and threads share them.  At its end the
program writes malloc_info(0) to an XML file and what glibc's dynamic
threshold rule predicts to a JSON file.  Checked:
  * number of arenas == the XML's <heap nr=...> elements == arena_max;
  * live mmapped chunks (count, bytes) == the XML's <total type="mmap">
    and the program's expectation;
  * the final mmap threshold and the number of threshold moves == the
    program's expectation;
  * sbrk_bytes == the main arena's <system type="current">;
  * each non-main arena's heap sizes add up to its <system type="current">;
  * every thread appears in some arena; some arena served several threads;
  * contention rows exist only with --timing;
  * the text output ends with the seed's summary lines; dump shows
    16-byte-aligned pointers (the chunk flag bits are masked off).
"""
import glob
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import atr_runner  # noqa: E402
from atr_runner import fail  # noqa: E402

ARENA_MAX = 3


def run_case(c):
    """timing: recorded with --timing; plain: without."""
    at = c.alloctrace
    prog = c.prog("arena_prog", "arenas")
    tmp = c.tmp
    out = os.path.join(tmp, "trace")
    xml_path = os.path.join(tmp, "mi.xml")
    exp_path = os.path.join(tmp, "expect.json")
    env = dict(os.environ)
    env["GLIBC_TUNABLES"] = "glibc.malloc.arena_max=%d" % ARENA_MAX
    cmd = [at, "record", "-o", out, "--no-rss"]
    if c.name == "timing":
        cmd.append("--timing")
    cmd += ["--", prog, xml_path, exp_path]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("record failed: %s %s" % (r.stdout, r.stderr))
    traces = glob.glob(os.path.join(out, "*.atr"))
    if len(traces) != 1:
        fail("expected one trace, got %r" % traces)
    trace = traces[0]
    exp = json.load(open(exp_path))
    root = ET.parse(xml_path).getroot()

    r = subprocess.run([at, "arenas", "--json", trace], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        fail("arenas --json: %s" % r.stderr)
    j = json.loads(r.stdout)

    heaps = root.findall("heap")
    sys_cur = {int(h.get("nr")): int(h.find("system[@type='current']").get("size"))
               for h in heaps}
    if len(j["arenas"]) != len(heaps) or len(heaps) != ARENA_MAX:
        fail("arenas: %d in the trace, %d in malloc_info, arena_max %d"
             % (len(j["arenas"]), len(heaps), ARENA_MAX))
    for ar in j["arenas"]:
        for k in ("id", "threads", "heaps"):
            if k not in ar:
                fail("arena without %r: %r" % (k, ar))
    mm = root.find("total[@type='mmap']")
    mm_n, mm_b = int(mm.get("count")), int(mm.get("size"))
    mc = j["mmap_chunks"]
    if (mc["live"], mc["live_bytes"]) != (mm_n, mm_b):
        fail("live mmapped chunks %d / %d bytes, malloc_info says %d / %d"
             % (mc["live"], mc["live_bytes"], mm_n, mm_b))
    if (mc["live"], mc["live_bytes"]) != (exp["mmap_live"], exp["mmap_live_bytes"]):
        fail("live mmapped chunks %r, program expected %r" % (mc, exp))
    if j["mmap_threshold"] != exp["mmap_threshold"]:
        fail("mmap_threshold %d, expected %d" % (j["mmap_threshold"], exp["mmap_threshold"]))
    if j["trim_threshold"] != 2 * exp["mmap_threshold"]:
        fail("trim_threshold %d" % j["trim_threshold"])
    if len(j["thresholds"]) != exp["threshold_changes"]:
        fail("threshold moves %r, expected %d" % (j["thresholds"], exp["threshold_changes"]))
    if j["sbrk_bytes"] != sys_cur[0]:
        fail("sbrk_bytes %d, main arena system current %d" % (j["sbrk_bytes"], sys_cur[0]))
    ours = sorted(sum(h["size"] for h in ar["heaps"]) for ar in j["arenas"] if not ar["main"])
    theirs = sorted(v for nr, v in sys_cur.items() if nr != 0)
    if ours != theirs:
        fail("non-main arena sizes %r, malloc_info %r" % (ours, theirs))
    if not any(len(ar["heaps"]) > 1 for ar in j["arenas"] if not ar["main"]):
        fail("no arena with two heaps (one thread allocated 70 MiB)")
    served = set()
    for ar in j["arenas"]:
        served.update(ar["threads"])
    tids = {t["tid"] for t in j["threads"] if t["arena"] is not None}
    if len(tids) != exp["threads"] + 1 or not tids <= served:
        fail("threads %r, served %r" % (tids, served))
    if not any(len(ar["threads"]) > 1 for ar in j["arenas"]):
        fail("no arena shared by threads")
    if c.name == "timing":
        if not j["timing"] or not j["contention"]:
            fail("timing recorded but no contention rows")
    elif j["timing"] or j["contention"]:
        fail("contention without timing")

    r = subprocess.run([at, "arenas", trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("arenas text: %s" % r.stderr)
    want = ["Contention:", "Active arenas:", "Allocated heaps:",
            "Total sbrk: %d bytes" % sys_cur[0],
            "Mmap threshold in the end: %d kb" % (exp["mmap_threshold"] // 1024)]
    for w in want:
        if w not in r.stdout:
            fail("text output lacks %r:\n%s" % (w, r.stdout[-3000:]))
    r = subprocess.run([at, "dump", "--json", trace], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        fail("dump: %s" % r.stderr)
    n = 0
    for line in r.stdout.splitlines():
        ev = json.loads(line)
        ret = ev.get("ret")
        if isinstance(ret, str):
            ret = int(ret, 16)
        if isinstance(ret, int) and ret:
            n += 1
            if ret % 16:
                fail("dump shows an unaligned pointer: %s" % line)
    if n < 1000:
        fail("dump: only %d allocations" % n)
    return "%d arenas, %d live mmapped chunks, threshold %d" % (len(heaps), mm_n,
                                                                exp["mmap_threshold"])


def run_xfree(c):
    """xfree: threads free each other's blocks (their tcaches then hold
    other arenas' chunks): no moves, one worker per non-main arena."""
    at = c.alloctrace
    prog = c.prog("xfree_prog", "arenas")
    out = os.path.join(c.tmp, "trace")
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    r = subprocess.run([at, "record", "-o", out, "--no-rss", "--", prog], env=env,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("record failed: %s %s" % (r.stdout, r.stderr))
    traces = glob.glob(os.path.join(out, "*.atr"))
    if len(traces) != 1:
        fail("expected one trace, got %r" % traces)
    r = subprocess.run([at, "arenas", "--json", traces[0]], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        fail("arenas --json: %s" % r.stderr)
    j = json.loads(r.stdout)
    moves = sum(1 for t in j["threads"] for m in t["moves"] if m["from"] is not None)
    if moves:
        fail("%d moves, expected none (tcache hits of other arenas' chunks)" % moves)
    workers = [ar for ar in j["arenas"] if not ar["main"]]
    if len(workers) != 4 or any(len(ar["threads"]) != 1 for ar in workers):
        fail("non-main arenas and their threads: %r (expected 4 with one each)"
             % [ar["threads"] for ar in workers])
    if len({ar["threads"][0] for ar in workers}) != 4:
        fail("a thread in two arenas: %r" % [ar["threads"] for ar in workers])
    if j["allocs_maybe_tcache"] < 1000:
        fail("only %d allocations taken as tcache hits" % j["allocs_maybe_tcache"])
    return "4 arenas, one thread each, %d allocations maybe from a tcache" % (
        j["allocs_maybe_tcache"])


CASES = {"timing": run_case, "plain": run_case, "xfree": run_xfree}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, tmp_prefix="atr-arenas-"))
