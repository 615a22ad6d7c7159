#!/usr/bin/env python3
"""test_mappings.py - the program's own mappings in report (issue 18), on
python3 with its default allocator (pymalloc maps its arenas with mmap).

  python_arenas   `record --stacks` of a dict of 200k strings: report
                  --json shows the arenas as mmap calls of one stack
                  holding most of the mapped bytes, with frames, and the
                  RSS account: heap live + mappings + the tracer's own
                  memory + rest = RSS at the RSS
                  peak; and peak heap + the mappings + the interpreter's
                  own rest (python3 sleeping 0.2 s: the same code, a
                  tiny heap) within 5 % of the peak RSS.  export --format perfetto has
                  the mapped counter track reaching the same peak.  info
                  --json's max_rss is one of the .rss file's samples, the
                  program's part and the recorder's own apart.

usage: test_mappings.py [--build DIR] CASE...   (or --list; tests/atr_runner.py)
Exit 77 (skipped) when /usr/bin/python3 is missing.
"""
import json
import os
import struct
import subprocess
import sys

import atr_runner

PY = "/usr/bin/python3"  # not a pyenv shim (a bash script)
# the dict stays alive for a while: the RSS peak is then sampled (every 10
# ms, late on a loaded machine) while the heap is at its peak, not during
# the teardown, when glibc and pymalloc still hold what was freed
DICT = "import time; d = {i: str(i) for i in range(200000)}; time.sleep(0.4)"


def record_report(build, tmp, name, code, stacks):
    tdir = os.path.join(tmp, name)
    cmd = [os.path.join(build, "alloctrace"), "record", "-o", tdir]
    cmd += ["--stacks"] if stacks else []
    subprocess.run(cmd + ["--", PY, "-c", code], check=True, capture_output=True)
    p = subprocess.run([os.path.join(build, "alloctrace"), "report", "--json", tdir],
                       check=True, capture_output=True, text=True)
    doc = json.loads(p.stdout)
    procs = doc["processes"] if isinstance(doc, dict) and "processes" in doc else doc
    return procs[0] if isinstance(procs, list) else procs


def case_python_arenas(build, tmp):
    errs = []
    big = record_report(build, tmp, "dict", DICT, True)
    small = record_report(build, tmp, "pass", "import time; time.sleep(0.2)", False)
    m = big["mapped"]
    mmaps = big["other_calls"]["mmap"]
    if mmaps < 10:
        errs.append("only %d mmap calls traced (pymalloc maps its arenas)" % mmaps)
    if m["peak_bytes"] < 8 << 20:
        errs.append("mapped peak %d bytes: the arenas are missing" % m["peak_bytes"])
    top = m["stacks"][0] if m["stacks"] else None
    if not top or top["bytes"] < m["peak_bytes"] // 2 or not top.get("frames"):
        errs.append("no stack holding most mapped bytes, with frames: %r" % (top,))
    for p, what in ((big, "dict"), (small, "pass")):
        a = p.get("rss_account")
        if not a:
            errs.append("%s: no rss_account (RSS samples missing?)" % what)
            continue
        if a["heap_live"] + a["mapped"] + a["tracer"] + a["rest"] != a["rss"]:
            errs.append("%s: the account does not add up: %r" % (what, a))
        # the header page at least: the recorder measures its own memory
        # (the dict's peak comes long after record found its trace file)
        if what == "dict" and a["tracer"] < 4096:
            errs.append("%s: the tracer's own memory not measured: %r" % (what, a))
    # info's max RSS: the program's highest sample, the recorder's own of
    # that sample apart (read here from the .rss file itself)
    tdir = os.path.join(tmp, "dict")
    p = subprocess.run([os.path.join(build, "alloctrace"), "info", "--json", tdir],
                       check=True, capture_output=True, text=True)
    doc = json.loads(p.stdout)
    proc = doc["processes"][0] if isinstance(doc, dict) and "processes" in doc else doc
    mr = proc.get("max_rss")
    rss = [f for f in os.listdir(tdir) if f.endswith(".rss")]
    if not mr or len(rss) != 1:
        errs.append("info: no max_rss (%r) or not one .rss file (%r)" % (mr, rss))
    else:
        with open(os.path.join(tdir, rss[0]), "rb") as f:
            b = f.read()
        hs, ss = struct.unpack_from("<II", b, 12)
        samples = [struct.unpack_from("<QQQQ", b, o) for o in range(hs, len(b) - ss + 1, ss)]
        pairs = {(x[2] - min(x[3], x[2]), x[3]) for x in samples}
        if ss != 32 or not mr["tracer_known"] or mr["tracer_bytes"] < 4096:
            errs.append("info: the recorder's own memory not in the samples: %r" % mr)
        if (mr["program_bytes"], mr["tracer_bytes"]) not in pairs:
            errs.append("info: max_rss %r is no sample's" % mr)
    # the perfetto export's counter track of the same mappings
    out = os.path.join(tmp, "dict.json")
    subprocess.run([os.path.join(build, "alloctrace"), "export", "--format", "perfetto",
                    "-o", out, os.path.join(tmp, "dict")], check=True, capture_output=True)
    with open(out) as f:
        evs = [e for e in json.load(f)["traceEvents"]
               if e.get("name") == "mapped (program mmap/brk)"]
    if not evs or max(e["args"]["bytes"] for e in evs) != m["peak_bytes"]:
        errs.append("perfetto: no mapped counter reaching the peak %d" % m["peak_bytes"])
    if errs:
        return errs
    a, b = big["rss_account"], small["rss_account"]
    # The RSS at its peak sample lies between what was live then (the heap's
    # live bytes + the mappings + the idle interpreter's rest) and the same
    # with the heap's peak instead (its pages stay resident after it unless
    # glibc trims them; whether the sample falls before or after a trim
    # varies from run to run), within 5% either way.
    low = a["heap_live"] + a["mapped"] + a["tracer"] + b["rest"]
    high = big["peak_live_bytes"] + a["mapped"] + a["tracer"] + b["rest"]
    print("RSS %d at its peak sample; heap live then %d / at its peak %d + mapped %d + the"
          " idle interpreter's rest %d = %d .. %d"
          % (a["rss"], a["heap_live"], big["peak_live_bytes"], a["mapped"], b["rest"], low,
             high))
    if not low * 0.95 <= a["rss"] <= high * 1.05:
        errs.append("RSS %d outside heap (live then .. peak) + mappings + the interpreter's "
                    "rest: %d .. %d (5%% slack)" % (a["rss"], low, high))
    return errs


CASES = {"python_arenas": case_python_arenas}


def run_case(fn, c):
    """a case returns the list of what was wrong"""
    if not os.access(PY, os.X_OK):
        atr_runner.skip("no %s" % PY)
    errs = fn(c.build, c.tmp)
    if errs:
        atr_runner.fail("\n  ".join(errs))


if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=run_case, tmp_prefix="atr-maps-"))
