#!/usr/bin/env python3
"""test_exports.py - liballoctrace.so exports exactly the traced functions
of src/format/atr_calls.h plus the control API of src/preload/exports.map.in
(nm -D --defined-only), nothing more and nothing less.

usage: test_exports.py --build DIR --src DIR
"""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    with open(os.path.join(a.src, "src", "format", "atr_calls.h")) as f:
        calls = re.findall(r"^\s*X\([A-Z_0-9]+,\s*([a-z_0-9]+),", f.read(), re.M)
    with open(os.path.join(a.src, "src", "preload", "exports.map.in")) as f:
        text = f.read()
        control = re.findall(r"\b(alloctrace_[a-z_]+_impl)\b", text)
        control += re.findall(r"^\s*([a-z_0-9]+);\s*/\* alias of", text, re.M)
    if len(calls) < 2 or not control:
        print("FAIL: could not read the lists (%d calls, %d control)" % (len(calls), len(control)))
        return 1
    lib = os.path.join(os.path.abspath(a.build), "liballoctrace.so")
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    got = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] not in ("A",):  # A: version node names
            got.add(parts[2].split("@")[0])
    want = set(calls) | set(control)
    if got != want:
        print("FAIL: exported symbols differ")
        print("  missing: " + " ".join(sorted(want - got)))
        print("  extra:   " + " ".join(sorted(got - want)))
        return 1
    print("ok: %d traced functions + %d control functions exported" % (len(calls), len(control)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
