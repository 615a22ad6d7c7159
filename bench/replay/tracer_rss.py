#!/usr/bin/env python3
"""tracer_rss.py - the traced program's Max RSS against its untraced one.

usage: tracer_rss.py [--runs N] [--buffer-kb KB] ALLOCTRACE -- CMD [ARGS...]

Runs CMD untraced (/usr/bin/time's Max RSS) and under `ALLOCTRACE record`,
interleaved, N times each (default 5).  Of each traced run: the highest
RSS sample of record's .rss file (the tracer's own memory in it), the
highest of the program's (each sample's RSS less its `self`,
docs/RSS_FORMAT.md) and the tracer's own then, all of the process
`record` started.  Prints medians (min-max) in MB and the errors of both
traced figures against the untraced median.  The peak is sampled (every
10 ms): a short peak can be missed, so the traced figures can only be
low on that account.
"""
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile


def rss_file_max(path):
    with open(path, "rb") as f:
        b = f.read()
    hs, ss = struct.unpack_from("<II", b, 12)
    raw = prog = self_at = 0
    for o in range(hs, len(b) - ss + 1, ss):
        _, _, rss = struct.unpack_from("<QQQ", b, o)
        self = struct.unpack_from("<Q", b, o + 24)[0] if ss >= 32 else 0
        raw = max(raw, rss)
        if rss - min(self, rss) > prog:
            prog, self_at = rss - min(self, rss), self
    return raw, prog, self_at


def untraced(cmd):
    with tempfile.NamedTemporaryFile("r") as t:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name] + cmd, check=True,
                       stdout=subprocess.DEVNULL)
        return int(t.read().split()[-1]) * 1024


def traced(tool, cmd, bkb, work):
    d = os.path.join(work, "t")
    shutil.rmtree(d, ignore_errors=True)
    opts = ["--buffer-kb", str(bkb)] if bkb else []
    p = subprocess.run([tool, "record", "-o", d] + opts + ["--"] + cmd, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pid = p.stderr.split("(pid ")[1].split(":")[0]
    return rss_file_max(os.path.join(d, pid + ".rss"))


def fmt(v):
    return "%.1f (%.1f-%.1f)" % (statistics.median(v) / 1e6, min(v) / 1e6, max(v) / 1e6)


def main(argv):
    runs, bkb = 5, 0
    while argv and argv[0].startswith("--"):
        if argv[0] == "--runs":
            runs = int(argv[1])
        elif argv[0] == "--buffer-kb":
            bkb = int(argv[1])
        else:
            break
        argv = argv[2:]
    if len(argv) < 3 or argv[1] != "--":
        sys.exit(__doc__)
    tool, cmd = argv[0], argv[2:]
    work = tempfile.mkdtemp(prefix="tracer_rss.")
    u, raw, prog, self = [], [], [], []
    try:
        for _ in range(runs):
            u.append(untraced(cmd))
            r, p, s = traced(tool, cmd, bkb, work)
            raw.append(r)
            prog.append(p)
            self.append(s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = statistics.median(u)
    print("%s%s, %d runs each, MB:" % (" ".join(cmd), " --buffer-kb %d" % bkb if bkb else "",
                                       runs))
    print("  untraced Max RSS       %s" % fmt(u))
    print("  traced, all samples    %s  %+.0f%%" % (fmt(raw), 100 * (statistics.median(raw) / m - 1)))
    print("  traced, the program's  %s  %+.0f%%" % (fmt(prog), 100 * (statistics.median(prog) / m - 1)))
    print("  the tracer's own then  %s" % fmt(self))


if __name__ == "__main__":
    main(sys.argv[1:])
