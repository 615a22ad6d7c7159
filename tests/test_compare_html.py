#!/usr/bin/env python3
"""test_compare_html.py - `alloctrace compare --html`: a trace of the
threads test program, converted, compared under glibc and the
bookkeeping-only allocator; the page must be well-formed XHTML-ish SVG with
one bar per allocator for each of the four charts, an RSS timeline and its
ideal-RSS line per allocator, and nothing fetched from outside.

usage: test_compare_html.py --build DIR
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    at = os.path.join(os.path.abspath(a.build), "alloctrace")
    prog = os.path.join(os.path.abspath(a.build), "tests", "progs", "threads")
    with tempfile.TemporaryDirectory(prefix="atr-cmp.") as d:
        for cmd in ([at, "record", "-o", d + "/t", "--", prog, "4"],
                    [at, "convert", d + "/t", "-o", d + "/w.wl"],
                    [at, "compare", d + "/w.wl", "--allocators", "glibc,none", "--runs", "2",
                     "--timing", "off", "--html", d + "/c.html"]):
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                fail("%s exited %d: %s" % (" ".join(cmd[:2]), r.returncode, r.stderr))
        page = open(d + "/c.html").read()
    if re.search(r"(src|href)=\"(http|//)", page):
        fail("the page refers to outside resources")
    charts = re.findall(r'<svg class="bars" data-metric="(\w+)"', page)
    if charts != ["wall_ms", "thread_cpu_ms", "max_rss_mib"] and len(charts) < 3:
        fail("bar charts: %r" % charts)
    bars = page.count('class="bar"')
    if bars != 2 * len(charts):
        fail("%d bars for %d charts of 2 allocators" % (bars, len(charts)))
    if page.count('class="line"') != 2 or page.count('class="ideal"') != 2:
        fail("expected an RSS and an ideal-RSS line per allocator")
    if "glibc" not in page or "none" not in page:
        fail("allocator names missing")
    print("ok: %d charts, %d bars, 2 RSS timelines" % (len(charts), bars))


if __name__ == "__main__":
    main()
