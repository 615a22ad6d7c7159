#!/usr/bin/env python3
"""test_html.py - `report --html` and `export`, checked by their consumers.

Every case records tests/html/html_prog (markers, threads, leaks) with
`alloctrace record --stacks`, then:

  chromium  report --html: the page is self-contained; headless Chromium
            renders it with no JavaScript error (body data-status="ok"), and
            every chart drew something (data-drawn > 0); the markers are on
            the time axis.  A page with broken data must report an error
            (so the check itself works).  Fails when Chromium is missing.
  folded    export --format folded equals `alloctrace flamegraph`
  perfetto  valid trace-event JSON: process/thread names, "live heap"
            counter whose maximum is the peak, calls/s per thread, RSS
            counter, the markers as instant events
  pprof     gunzip + a small protobuf decoder: sample types, every id
            resolves, totals equal `report --json`'s, leak_some's leak
  massif    ms_print reads it and shows the peak with the right bytes

usage: test_html.py [--build DIR] CASE...  (or --list; tests/atr_runner.py; Python 3
       standard library only)
"""

import gzip
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import atr_runner  # noqa: E402
from atr_runner import fail  # noqa: E402

MARKERS = ["phase-1: grow", "phase-2: threads", "phase-3: shrink"]
LEAK_BYTES = sum(1000 + i for i in range(10))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, timeout=kw.pop("timeout", 60), **kw)
    if r.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr.decode(errors="replace")))
    return r


def record(build, tmp):
    out = os.path.join(tmp, "tr")
    prog = os.path.join(build, "tests", "html", "html_prog")
    run([os.path.join(build, "alloctrace"), "record", "--stacks", "-o", out, "--", prog])
    files = sorted(f for f in os.listdir(out) if f.endswith(".atr"))
    if len(files) != 1:
        fail("expected one trace file, got %r" % files)
    return os.path.join(out, files[0])


def report_json(build, trace):
    r = run([os.path.join(build, "alloctrace"), "report", "--json", "--top", "0", trace])
    return json.loads(r.stdout)["processes"][0]


# ---- chromium -----------------------------------------------------------------

def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def chromium_dump(chrome, page, tmp, frag=""):
    prof = tempfile.mkdtemp(dir=tmp)
    cmd = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--user-data-dir=" + prof, "--window-size=1400,2000",
           "--dump-dom", "file://" + page + frag]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, timeout=60)
    if r.returncode != 0 or not r.stdout:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return r.stdout.decode("utf-8", errors="replace"), time.monotonic() - t0


UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def table_column(dom_text, box_id, col):
    """The values of one column of the table inside element box_id, in
    page order (numbers parsed from "1,234" / "12.5 KiB")."""
    start = dom_text.find('id="%s"' % box_id)
    if start < 0:
        fail("no element %s" % box_id)
    end = dom_text.find("</table>", start)
    tab = dom_text[start:end]
    heads = re.findall(r'<th[^>]*data-col="([^"]+)"', tab)
    if col not in heads:
        fail("no column %s in %s (%r)" % (col, box_id, heads))
    k = heads.index(col)
    out = []
    for row in re.findall(r"<tr>(.*?)</tr>", tab.split("<tbody>", 1)[1], re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        v = re.sub(r"<[^>]+>", "", cells[k]).strip()
        if k == 0:
            out.append(v.split(" ")[0])
            continue
        m = re.match(r"([\d.,]+)\s*(\w*)", v)
        out.append(float(m.group(1).replace(",", "")) * UNITS.get(m.group(2), 1))
    return out


class Dom(html.parser.HTMLParser):
    """Attributes of elements with an id, of <body>, and all text."""

    def __init__(self):
        super().__init__()
        self.ids, self.body, self.text = {}, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if "id" in a:
            self.ids[a["id"]] = a

    def handle_data(self, data):
        self.text.append(data)


def case_chromium(args, tmp):
    chrome = find_chromium()
    if not chrome:
        fail("chromium is not installed: this test renders the HTML report in headless "
             "Chromium (scripts/setup-deps.sh installs the Debian package 'chromium')")
    trace = record(args.build, tmp)
    rep = report_json(args.build, trace)
    page = os.path.join(tmp, "report.html")
    run([os.path.join(args.build, "alloctrace"), "report", "--html", page, trace])
    src = open(page, encoding="utf-8").read()
    # self-contained: nothing is fetched
    for bad in (r"<script[^>]+src=", r"<link\b", r"@import", r"url\(", r"<iframe", r"<img"):
        if re.search(bad, src, re.I):
            fail("page is not self-contained: matches %r" % bad)
    for url in re.findall(r"https?://[^\s\"'<>)]+", src):
        if url != "http://www.w3.org/2000/svg":
            fail("page references %s" % url)
    dom_text, secs = chromium_dump(chrome, page, tmp)
    d = Dom()
    d.feed(dom_text)
    if d.body is None:
        fail("no <body> in the dumped DOM")
    status = d.body.get("data-status")
    if status != "ok":
        fail("page status %r (a JavaScript error?)" % status)
    pid = rep["pid"]
    for chart in ("heap", "calls", "sizes", "lifetimes", "flame"):
        a = d.ids.get("%s-%d" % (chart, pid))
        if a is None:
            fail("chart %s-%d missing" % (chart, pid))
        n = int(a.get("data-drawn", "0"))
        if n <= 0:
            fail("chart %s drew nothing (data-drawn=%r)" % (chart, a.get("data-drawn")))
    text = "".join(d.text)
    for m in MARKERS:
        if m not in text:
            fail("marker %r not on the time axis" % m)
    if "peak " not in text or "T4 (tid" not in text:
        fail("peak label or the 4th thread's series missing")
    if "peak RSS" not in text:
        fail("RSS samples (DIR/<pid>.rss) not shown")
    if "hottest call paths by calls" not in text:
        fail("top tables missing")
    print("chromium %s: rendered in %.1f s wall, script %s ms, load %s ms, page %d bytes"
          % (chrome, secs, d.body.get("data-render-ms"), d.body.get("data-load-ms"), len(src)))

    # the functions table sorts by any column; the flame graph searches and
    # zooms (page state from the URL fragment, as a shared link would set it)
    vals = table_column(dom_text, "functions-%d" % pid, "self_calls")  # the default order
    if len(vals) < 3 or vals != sorted(vals, reverse=True):
        fail("functions table not sorted by self calls: %r" % vals[:8])
    for frag, col, asc in (("#sort=total_bytes&search=%5Emain%24&zoom=main", "total_bytes", False),
                           ("#sort=function-asc", "function", True)):
        dt, _ = chromium_dump(chrome, page, tmp, frag)
        vals = table_column(dt, "functions-%d" % pid, col)
        if len(vals) < 3 or vals != sorted(vals, reverse=not asc):
            fail("functions table not sorted by %s%s: %r" % (col, " asc" if asc else "", vals[:8]))
        if "search" in frag:
            d3 = Dom()
            d3.feed(dt)
            t3 = "".join(d3.text)
            if "search matched" not in t3 or "zoomed to main" not in t3:
                fail("flame graph search/zoom from the URL: %r"
                     % [x for x in d3.text if "total" in x][:3])
            if not re.search(r'class="[^"]*\bhit\b', dt):
                fail("no frame highlighted by the search")

    # the check must catch a broken page
    broken = os.path.join(tmp, "broken.html")
    with open(broken, "w", encoding="utf-8") as f:
        f.write(src.replace('"processes":[', '"processes":[{"pid":1},', 1))
    dom_text, _ = chromium_dump(chrome, broken, tmp)
    d2 = Dom()
    d2.feed(dom_text)
    if not (d2.body or {}).get("data-status", "").startswith("error"):
        fail("a page with broken data did not report an error: %r"
             % (d2.body or {}).get("data-status"))


# ---- folded ---------------------------------------------------------------------

def case_folded(args, tmp):
    trace = record(args.build, tmp)
    a = os.path.join(args.build, "alloctrace")
    for by in ("bytes", "leaked", "calls"):
        fl = run([a, "flamegraph", "--by", by, trace]).stdout
        ex = run([a, "export", "--format", "folded", "--by", by, trace]).stdout
        if fl != ex or not fl:
            fail("export --format folded --by %s differs from flamegraph" % by)
    leaked = run([a, "export", "--format", "folded", "--by", "leaked", trace]).stdout.decode()
    if not any("leak_some" in l and l.endswith(" %d" % LEAK_BYTES) for l in leaked.splitlines()):
        fail("folded --by leaked lacks main;leak_some %d:\n%s" % (LEAK_BYTES, leaked))


# ---- perfetto -------------------------------------------------------------------

def case_perfetto(args, tmp):
    trace = record(args.build, tmp)
    rep = report_json(args.build, trace)
    out = os.path.join(tmp, "trace.json")
    run([os.path.join(args.build, "alloctrace"), "export", "--format", "perfetto", "-o", out,
         trace])
    doc = json.load(open(out))
    ev = doc["traceEvents"]
    pid = rep["pid"]
    for e in ev:
        for k in ("ph", "name", "pid"):
            if k not in e:
                fail("event without %s: %r" % (k, e))
        if e["ph"] != "M" and not isinstance(e.get("ts"), (int, float)):
            fail("event without ts: %r" % e)
    names = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    if not names or names[0]["pid"] != pid:
        fail("process_name metadata missing")
    if len([e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]) != rep["threads"]:
        fail("thread_name metadata: expected %d" % rep["threads"])
    heap = [e for e in ev if e["ph"] == "C" and e["name"] == "live heap"]
    if len(heap) < 10:
        fail("live heap counter has %d events" % len(heap))
    if max(e["args"]["bytes"] for e in heap) != rep["peak_live_bytes"]:
        fail("live heap counter max %d != peak %d"
             % (max(e["args"]["bytes"] for e in heap), rep["peak_live_bytes"]))
    ts = [e["ts"] for e in heap]
    if ts != sorted(ts):
        fail("live heap counter not in time order")
    calls = [e for e in ev if e["ph"] == "C" and e["name"] == "calls/s"]
    keys = set()
    for e in calls:
        keys |= set(e["args"])
    if not {"T1", "T2", "T3", "T4"} <= keys:
        fail("calls/s tracks %r lack T1..T4" % sorted(keys))
    if not [e for e in ev if e["ph"] == "C" and e["name"] == "memory" and e["args"]["rss"] > 0]:
        fail("no RSS counter")
    inst = {e["name"] for e in ev if e["ph"] == "i"}
    for m in MARKERS + ["peak live heap"]:
        if m not in inst:
            fail("instant event %r missing (have %r)" % (m, sorted(inst)))


# ---- pprof ----------------------------------------------------------------------

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if not c & 0x80:
            return v, i


def message(b):
    """field number -> list of (wire type, value); value is int or bytes"""
    out, i = {}, 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
            if len(v) != n:
                fail("truncated field %d" % f)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            fail("bad wire type %d" % wt)
        out.setdefault(f, []).append((wt, v))
    if i != len(b):
        fail("message overruns its length")
    return out


def ints(m, f):
    """a repeated integer field, packed or not"""
    vals = []
    for wt, v in m.get(f, []):
        if wt == 0:
            vals.append(v)
        else:
            j = 0
            while j < len(v):
                x, j = varint(v, j)
                vals.append(x)
    return vals


def one(m, f, default=0):
    v = m.get(f)
    return v[-1][1] if v else default


def case_pprof(args, tmp):
    trace = record(args.build, tmp)
    rep = report_json(args.build, trace)
    out = os.path.join(tmp, "prof.pb.gz")
    run([os.path.join(args.build, "alloctrace"), "export", "--format", "pprof", "-o", out,
         trace])
    raw = open(out, "rb").read()
    if raw[:2] != b"\x1f\x8b":
        fail("not gzip'd")
    p = message(gzip.decompress(raw))
    strings = [v.decode() for _, v in p.get(6, [])]
    if not strings or strings[0] != "":
        fail("string_table[0] must be empty")
    st = [message(v) for _, v in p.get(1, [])]
    types = [(strings[one(m, 1)], strings[one(m, 2)]) for m in st]
    want = [("alloc_objects", "count"), ("alloc_space", "bytes"),
            ("inuse_objects", "count"), ("inuse_space", "bytes")]
    if types != want:
        fail("sample types %r" % types)
    funcs = {one(m, 1): m for m in (message(v) for _, v in p.get(5, []))}
    locs = {one(m, 1): m for m in (message(v) for _, v in p.get(4, []))}
    maps = {one(m, 1): m for m in (message(v) for _, v in p.get(3, []))}
    for fid, f in funcs.items():
        if not 0 < one(f, 2) < len(strings):
            fail("function %d: bad name index" % fid)
    totals = [0, 0, 0, 0]
    leak = None
    for _, v in p.get(2, []):
        s = message(v)
        vals = ints(s, 2)
        if len(vals) != 4:
            fail("sample with %d values" % len(vals))
        totals = [a + b for a, b in zip(totals, vals)]
        lids = ints(s, 1)
        for lid in lids:
            if lid not in locs:
                fail("sample references location %d" % lid)
        names = []
        for lid in lids:
            loc = locs[lid]
            mid = one(loc, 2)
            if mid and mid not in maps:
                fail("location %d references mapping %d" % (lid, mid))
            for _, lv in loc.get(4, []):
                ln = message(lv)
                fid = one(ln, 1)
                if fid not in funcs:
                    fail("line references function %d" % fid)
                names.append(strings[one(funcs[fid], 2)])
        if names[:2] == ["leak_some", "main"]:
            leak = vals
    allocs = rep["total_calls"] - rep["calls"]["free"]
    want = [allocs, rep["bytes_requested"], rep["leaks"]["blocks"], rep["leaks"]["bytes"]]
    if totals != want:
        fail("totals %r != report's %r" % (totals, want))
    if leak is None or leak[2:] != [10, LEAK_BYTES]:
        fail("leak_some's sample: %r" % leak)
    if one(p, 9) != 0 and one(p, 9) < 10 ** 18:
        fail("time_nanos %d" % one(p, 9))
    print("pprof: %d samples, %d locations, %d functions, %d mappings; totals %r"
          % (len(p.get(2, [])), len(locs), len(funcs), len(maps), totals))


# ---- massif ---------------------------------------------------------------------

def case_massif(args, tmp):
    ms = shutil.which("ms_print")
    if not ms:
        fail("ms_print (valgrind) is not installed")
    trace = record(args.build, tmp)
    rep = report_json(args.build, trace)
    out = os.path.join(tmp, "massif.out")
    run([os.path.join(args.build, "alloctrace"), "export", "--format", "massif", "-o", out,
         trace])
    text = run([ms, out]).stdout.decode()
    m = re.search(r"Detailed snapshots: \[([^\]]*)\]", text)
    if not m or "(peak)" not in m.group(1):
        fail("ms_print shows no peak snapshot:\n" + text[:3000])
    peak = int(re.search(r"(\d+) \(peak\)", m.group(1)).group(1))
    row = re.search(r"^\s*%d\s+[\d.,]+\s+([\d,]+)\s" % peak, text, re.M)
    if not row or int(row.group(1).replace(",", "")) != rep["peak_live_bytes"]:
        fail("peak snapshot total %r != %d" % (row and row.group(1), rep["peak_live_bytes"]))
    if "grow (" not in text:
        fail("the peak's tree does not name grow()")
    if "leak_some" not in text:
        fail("the last snapshot's tree does not name leak_some()")


# each case(c, tmp): c.build is the build directory
CASES = {"chromium": case_chromium, "folded": case_folded, "perfetto": case_perfetto,
         "pprof": case_pprof, "massif": case_massif}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=lambda fn, c: fn(c, c.tmp),
                             tmp_prefix="atr-html-"))
