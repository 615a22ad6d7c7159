#!/usr/bin/env python3
"""test_layering.py - every room of src/ includes only its own headers and
those of the rooms below it (docs/ARCHITECTURE.md, src/CMakeLists.txt), and
docs/INTERNALS.md names every source file of every room:

  platform <- util <- format <- liveset <- analysis, replay <- replaycmd (<- replay_main.c);
  format <- attach <- output, clickhouse <- cmds <- main.c
  preload: platform, format's atr_format.h / atr_calls.h / atr_v2.h (the pure v2
           block codec, compiled into the library), atn_stream.h (the network
           stream's constants; the sender) and include/ only

usage: test_layering.py --src DIR
"""
import argparse
import os
import re
import sys

ALLOWED = {
    "platform": {"platform"},
    "util": {"util", "platform"},
    "format": {"format", "util", "platform"},
    "liveset": {"liveset", "format", "util", "platform"},
    "analysis": {"analysis", "liveset", "format", "util", "platform"},
    "replay": {"replay", "liveset", "format", "util", "platform"},
    "attach": {"attach", "util", "platform", "format:atr_calls.h", "format:atr_err.h"},
    "output": {"output", "analysis", "liveset", "format", "util", "platform"},
    "clickhouse": {"clickhouse", "analysis", "liveset", "format", "util", "platform"},
    "replaycmd": {"replaycmd", "replay", "liveset", "format", "util", "platform"},
    "cmds": {"cmds", "output", "analysis", "liveset", "replay", "replaycmd", "attach", "clickhouse", "format", "util",
             "platform", "include"},
    "preload": {"preload", "include", "platform", "format:atr_format.h", "format:atr_calls.h",
                "format:atr_v2.h", "format:atn_stream.h"},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    src = os.path.join(a.src, "src")
    room_of = {}  # header file name -> room
    for room in ALLOWED:
        for f in os.listdir(os.path.join(src, room)):
            if f.endswith(".h"):
                room_of[f] = room
    for f in os.listdir(os.path.join(a.src, "include")):
        room_of[f] = "include"
    bad = []
    for room, ok in ALLOWED.items():
        d = os.path.join(src, room)
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(d, f)) as fh:
                for n, line in enumerate(fh, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    name = os.path.basename(m.group(1))
                    dep = room_of.get(name)
                    if dep is None:
                        bad.append("%s/%s:%d: unknown header %s" % (room, f, n, m.group(1)))
                    elif dep not in ok and "%s:%s" % (dep, name) not in ok:
                        bad.append("%s/%s:%d: %s may not include %s (room %s)" % (room, f, n, room, m.group(1), dep))
    if len(room_of) < 20:
        print("FAIL: found only %d headers under %s" % (len(room_of), src))
        return 1
    # docs/ARCHITECTURE.md promises that docs/INTERNALS.md names every
    # source file of every room: a new file needs its line there
    with open(os.path.join(a.src, "docs", "INTERNALS.md")) as fh:
        internals = fh.read()
    # ... and stays a five-minute read (about 250 words a minute)
    with open(os.path.join(a.src, "docs", "ARCHITECTURE.md")) as fh:
        words = len(fh.read().split())
    if words > 1500:
        bad.append("docs/ARCHITECTURE.md: %d words, more than a five-minute read (1,500): "
                   "move the detail to docs/INTERNALS.md" % words)
    for room in ALLOWED:
        for f in sorted(os.listdir(os.path.join(src, room))):
            stem, ext = os.path.splitext(f)
            if ext in (".c", ".h") and stem not in internals:
                bad.append("%s/%s: not named in docs/INTERNALS.md" % (room, f))
    for b in bad:
        print("FAIL: " + b)
    if bad:
        return 1
    print("ok: %d rooms keep to their layers" % len(ALLOWED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
