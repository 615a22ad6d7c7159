#!/usr/bin/env python3
"""rss_parts.py - what a process's RSS consists of at its peak.

usage: rss_parts.py [-i SECONDS] [-o STDOUT_FILE] [-v] -- CMD [ARGS...]

Runs CMD, reads /proc/PID/smaps every -i seconds (default 0.005) while
CMD's own image runs (samples taken before its exec, e.g. of this
interpreter, are skipped) and prints the sample with the largest total Rss
by part, in KiB:
  arenas  glibc's non-main arena heaps (anonymous rw mappings that start on
          a 64 MiB boundary: HEAP_MAX_SIZE), with their count
  files   file-backed mappings: the executable and its libraries
  stacks  thread stacks (anonymous mappings of 256 KiB, the replay's, or of
          8 MiB, glibc's default)
  anon    every other anonymous mapping (the replay's decoder buffers and
          thread states, the allocator's mmapped chunks, ...)
  [heap]  the main arena (brk), and [stack], [vdso], ...
-v adds one line per file and per other mapping.  The peak is sampled, so
it can miss a short one; the kernel's own figure (VmHWM) is printed too
when the last sample read it.
"""
import collections
import os
import sys
import time


def parse(txt):
    maps, cur = [], None
    for ln in txt.splitlines():
        f = ln.split()
        if not f:
            continue
        if "-" in f[0] and not f[0].endswith(":"):
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            cur = {"lo": lo, "kib": (hi - lo) // 1024, "perm": f[1],
                   "path": f[5] if len(f) > 5 else "", "rss": 0}
            maps.append(cur)
        elif f[0] == "Rss:" and cur is not None:
            cur["rss"] = int(f[1])
    return maps


def part(m):
    if m["path"].startswith("/"):
        return "files"
    if m["path"]:
        return m["path"]
    if m["perm"].startswith("rw") and m["lo"] % (64 << 20) == 0:
        return "arenas"
    if m["kib"] in (256, 8192):
        return "stacks"
    return "anon"


def main():
    a = sys.argv[1:]
    iv, out, verbose = 0.005, None, False
    while a and a[0] != "--":
        if a[0] == "-i":
            iv, a = float(a[1]), a[2:]
        elif a[0] == "-o":
            out, a = a[1], a[2:]
        elif a[0] == "-v":
            verbose, a = True, a[1:]
        else:
            sys.exit(__doc__)
    a = a[1:]
    if not a:
        sys.exit(__doc__)
    me = os.readlink("/proc/self/exe")
    pid = os.fork()
    if pid == 0:
        if out:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
        os.execvp(a[0], a)
    best, best_rss, best_exe, hwm, n = [], -1, "", 0, 0
    while not os.waitpid(pid, os.WNOHANG)[0]:
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
            with open("/proc/%d/smaps" % pid) as f:
                txt = f.read()
            with open("/proc/%d/status" % pid) as f:
                st = f.read()
        except OSError:
            time.sleep(iv)
            continue
        if exe != me:
            n += 1
            maps = parse(txt)
            tot = sum(m["rss"] for m in maps)
            if tot > best_rss:
                best, best_rss, best_exe = maps, tot, exe
            for ln in st.splitlines():
                if ln.startswith("VmHWM:"):
                    hwm = int(ln.split()[1])
        time.sleep(iv)
    parts = collections.Counter()
    for m in best:
        parts[part(m)] += m["rss"]
    narenas = sum(1 for m in best if part(m) == "arenas")
    print("%s: %d samples; peak sampled Rss %d KiB (VmHWM %d KiB at the last sample)"
          % (os.path.basename(best_exe), n, best_rss, hwm))
    print("  arenas %d (%d heaps), files %d, stacks %d, anon %d, %s" % (
        parts.pop("arenas", 0), narenas, parts.pop("files", 0), parts.pop("stacks", 0),
        parts.pop("anon", 0), ", ".join("%s %d" % kv for kv in sorted(parts.items()) if kv[1])))
    if verbose:
        by = collections.Counter()
        for m in best:
            if m["rss"] and part(m) in ("files", "anon"):
                by[os.path.basename(m["path"]) if m["path"] else "anon %d KiB" % m["kib"]] += m["rss"]
        for k, v in by.most_common():
            print("    %-40s %6d" % (k, v))


if __name__ == "__main__":
    main()
