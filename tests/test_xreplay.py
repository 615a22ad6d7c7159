#!/usr/bin/env python3
"""test_xreplay.py - the program's other calls through convert and replay
(workload version 3, docs/WORKLOAD_FORMAT.md "Mappings").

Cases:
  threshold   tests/progs/mmthresh sets M_MMAP_THRESHOLD with mallopt, then
              allocates blocks above and below it.  Recorded; `alloctrace
              arenas` on its trace counts the mmapped chunks glibc made
              (must be the program's own count).  Converted; the workload
              header's op counts are exact.  Then `alloctrace replay` itself
              runs under `alloctrace record` (nothing of the replay's own
              account is trusted): `arenas` on the replay's trace must count
              the same mmapped chunks as on the program's, and the replay
              process must have called mallopt and malloc_trim as the
              program did.  With --no-mallopt the replay makes only the
              chunks above glibc's default threshold, and calls no mallopt.
  counts      tests/progs/xcalls (each call, failures included): exact op
              counts in the workload header (file-backed mmap, failed calls,
              advice the replay does not repeat are no ops), the replay's
              counts per op (made = in the workload), --no-mappings skips
              the mappings, --allocator none makes none of them.
  jemalloc    the same workload under jemalloc: mallopt and malloc_trim are
              not applicable (jemalloc exports neither), the rest is made.
  runner      `alloctrace replay` executes the lean runner alloctrace-replay
              (src/replay_main.c): the runner needs no library but libc,
              libzstd and libm (not zlib and every command's code, which
              alloctrace maps: they would be in the replay's Max RSS), refuses to run
              without `alloctrace replay`, and the replay's calls are made
              in its process image (recorded: the root's last exec image),
              the program's thread's on the image's main thread (glibc's
              main arena, as the program had): the other threads make
              fewer calls than the workload has.

usage: test_xreplay.py --build DIR CASE   (or --list)
A sanitizer build runs under ASan's allocator, not glibc's: skipped (77).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

XOPS = ["mallopt", "malloc_trim", "malloc_usable_size", "mmap", "mmap_fixed", "munmap",
        "mremap", "madvise"]
CASES = ["threshold", "counts", "jemalloc", "runner"]


class Failure(Exception):
    pass


def env():
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "GLIBC_TUNABLES") and not k.startswith("ALLOCTRACE_")}


def run(cmd, check=True):
    p = subprocess.run(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    if check and p.returncode != 0:
        raise Failure("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def header(path):
    """The v3 header fields of a workload file (WORKLOAD_FORMAT.md)."""
    with open(path, "rb") as f:
        h = f.read(384)
    if h[:8] != b"ALCWORKL":
        raise Failure("%s: not a workload" % path)
    version, hsize, features = struct.unpack_from("<IIQ", h, 8)
    xops = struct.unpack_from("<16Q", h, 224)
    file_maps, unknown, odd = struct.unpack_from("<3Q", h, 352)
    return {"version": version, "header_size": hsize, "features": features,
            "calls": struct.unpack_from("<Q", h, 104)[0],
            "map_slots": struct.unpack_from("<Q", h, 216)[0],
            "xops": dict(zip(XOPS, xops)), "xops_rest": xops[len(XOPS):],
            "file_maps": file_maps, "map_unknown": unknown, "map_odd": odd}


def root_process(cli, tdir):
    """info --json's entry of the process record started (its parent is not
    in the trace), its last exec image: the replay runner that `alloctrace
    replay` executes, not the verifier it forks."""
    procs = json.loads(run([cli, "info", tdir, "--json"]).stdout)["processes"]
    pids = {p["pid"] for p in procs}
    last = {}
    for p in procs:
        if p.get("ppid") not in pids and p["exec_seq"] >= last.get(p["pid"], p)["exec_seq"]:
            last[p["pid"]] = p
    roots = list(last.values())
    if len(roots) != 1:
        raise Failure("expected one root process in %s, got %r" % (tdir, roots))
    return roots[0]


def mmapped_chunks(cli, trace_file):
    j = json.loads(run([cli, "arenas", "--json", trace_file]).stdout)
    return j["mmap_chunks"]["served"]


def expect_line(text):
    lines = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    if len(lines) != 1:
        raise Failure("expected one expectation line, got %r" % text)
    return lines[0]


def record_prog(cli, build, prog, work):
    tdir = os.path.join(work, prog)
    p = run([cli, "record", "-o", tdir, "--", os.path.join(build, "tests", "progs", prog)])
    return tdir, expect_line(p.stdout)


def convert(cli, tdir, wl):
    run([cli, "convert", "-q", "--no-progress", tdir, "-o", wl])
    return header(wl)


def check_header(h, want, errs, **extra):
    # bit 0 XOPS; bit 1 TOUCH comes with any trace of today's recorder
    if h["version"] != 3 or h["header_size"] != 384 or not h["features"] & 1:
        errs.append("header: version %d, header_size %d, features %d; expected 3, 384, bit 0"
                    % (h["version"], h["header_size"], h["features"]))
    if h["xops"] != want:
        errs.append("workload op counts %r, expected %r" % (h["xops"], want))
    if any(h["xops_rest"]):
        errs.append("unused op counters not zero: %r" % (h["xops_rest"],))
    for k, v in extra.items():
        if h[k] != v:
            errs.append("header %s = %d, expected %d" % (k, h[k], v))


def replay_json(cli, wl, *opts):
    p = run([cli, "replay", wl, "--json", "--timing", "off", "--think", "off"] + list(opts))
    return json.loads(p.stdout)


def check_done(j, want, errs, what, skipped=(), na=()):
    for k in XOPS:
        x = j["other_calls"][k]
        n = want[k]
        exp = {"ops": n, "done": 0 if k in skipped or k in na else n,
               "skipped": n if k in skipped else 0, "not_applicable": n if k in na else 0,
               "failed": 0}
        got = {a: x[a] for a in exp}
        if got != exp:
            errs.append("%s: %s: %r, expected %r" % (what, k, got, exp))


def case_threshold(cli, build, work):
    errs = []
    tdir, e = record_prog(cli, build, "mmthresh", work)
    prog = root_process(cli, tdir)
    n_prog = mmapped_chunks(cli, prog["path"])
    if n_prog != e["mmapped"]:
        errs.append("arenas counts %d mmapped chunks in the program's trace, the program "
                    "made %d" % (n_prog, e["mmapped"]))
    wl = os.path.join(work, "mm.wl")
    h = convert(cli, tdir, wl)
    check_header(h, e["xops"], errs, file_maps=0, map_unknown=0, map_odd=0)
    for opts, want, mallopts in (([], e["mmapped"], 2),
                                 (["--no-mallopt"], e["mmapped_default"], 0)):
        rdir = os.path.join(work, "replay%s" % "".join(opts))
        p = run([cli, "record", "-o", rdir, "--", cli, "replay", wl, "--json", "--timing", "off",
                 "--think", "off"] + opts)
        j = json.loads(p.stdout)
        what = "replay %s" % " ".join(opts)
        check_done(j, e["xops"], errs, what,
                   skipped=("mallopt", "malloc_trim") if opts else ())
        rp = root_process(cli, rdir)
        n = mmapped_chunks(cli, rp["path"])
        if n != want:
            errs.append("%s: arenas counts %d mmapped chunks in the replay's trace, expected %d "
                        "(the program made %d)" % (what, n, want, n_prog))
        oc = rp["other_calls"]
        if oc["mallopt"] != mallopts or oc["malloc_trim"] != mallopts:
            errs.append("%s: the replay process called mallopt %d and malloc_trim %d times, "
                        "expected %d" % (what, oc["mallopt"], oc["malloc_trim"], mallopts))
        if oc["malloc_usable_size"] != e["xops"]["malloc_usable_size"] or oc["mremap"] != 1:
            errs.append("%s: the replay process's other calls %r" % (what, oc))
    if e["mmapped"] == e["mmapped_default"]:
        errs.append("the program's mallopt makes no difference: the test shows nothing")
    return errs


# tests/progs/xcalls: 4 mmaps (one file-backed, one failed), 7 munmaps (the
# file mapping's and a failed one are no ops), 2 mremaps (one failed), 3
# madvise (WILLNEED is not repeated, one failed), brk/sbrk (not replayed)
XCALLS_OPS = {"mallopt": 3, "malloc_trim": 2, "malloc_usable_size": 2, "mmap": 3,
              "mmap_fixed": 0, "munmap": 5, "mremap": 1, "madvise": 1}


def case_counts(cli, build, work):
    errs = []
    tdir, e = record_prog(cli, build, "xcalls", work)
    wl = os.path.join(work, "x.wl")
    h = convert(cli, tdir, wl)
    check_header(h, XCALLS_OPS, errs, file_maps=1, map_unknown=0, map_odd=0, map_slots=3)
    j = replay_json(cli, wl)
    check_done(j, XCALLS_OPS, errs, "replay")
    if j["other_calls"]["mallopt"]["unlike_trace"]:
        errs.append("mallopt returned other results than traced under glibc")
    if j["usable_size_trace_bytes"] != j["usable_size_bytes"]:
        errs.append("malloc_usable_size: %d bytes here, %d traced (same glibc)"
                    % (j["usable_size_bytes"], j["usable_size_trace_bytes"]))
    if j["mapped_bytes"] != (64 << 10) + (1 << 20) + 3 * 4096 + (64 << 10):
        errs.append("mapped_bytes %d" % j["mapped_bytes"])
    maps = ("mmap", "mmap_fixed", "munmap", "mremap", "madvise")
    check_done(replay_json(cli, wl, "--no-mappings"), XCALLS_OPS, errs, "replay --no-mappings",
               skipped=maps)
    j = replay_json(cli, wl, "--dry-run")
    for k in XOPS:
        if j["other_calls"][k]["done"] or j["other_calls"][k]["ops"] != XCALLS_OPS[k]:
            errs.append("replay --dry-run: %s %r" % (k, j["other_calls"][k]))
    return errs


def case_jemalloc(cli, build, work):
    if run([cli, "replay", "--allocator", "jemalloc", "/dev/null"], check=False).stderr.find(
            "not found") >= 0:
        print("skipped: jemalloc not installed")
        return None
    errs = []
    tdir, e = record_prog(cli, build, "xcalls", work)
    wl = os.path.join(work, "x.wl")
    convert(cli, tdir, wl)
    j = replay_json(cli, wl, "--allocator", "jemalloc")
    check_done(j, XCALLS_OPS, errs, "replay --allocator jemalloc",
               na=("mallopt", "malloc_trim"))
    p = run([cli, "replay", wl, "--allocator", "jemalloc", "--timing", "off"])
    if "not applicable" not in p.stdout:
        errs.append("the text result does not say mallopt is not applicable:\n" + p.stdout)
    return errs


def needed(path):
    out = run(["readelf", "-d", path]).stdout
    return {l.split("[")[1].split("]")[0] for l in out.splitlines() if "(NEEDED)" in l}


def case_runner(cli, build, work):
    errs = []
    runner = os.path.join(build, "alloctrace-replay")
    ok = ("libc.so", "libzstd.so", "libm.so", "ld-linux")
    extra = sorted(n for n in needed(runner) if not n.startswith(ok))
    if extra:
        errs.append("alloctrace-replay needs %s: only libc, libzstd and libm may be mapped "
                    "into the replay (src/CMakeLists.txt: it links atr_replaycmd alone)" % extra)
    if not any(n.startswith(ok) for n in needed(runner)):
        errs.append("readelf found no NEEDED entry in %s: %r" % (runner, needed(runner)))
    p = run([runner, "/dev/null"], check=False)
    if p.returncode != 2 or "alloctrace replay" not in p.stderr:
        errs.append("the runner run directly: exit %d, %r" % (p.returncode, p.stderr))
    tdir, e = record_prog(cli, build, "xcalls", work)
    wl = os.path.join(work, "x.wl")
    convert(cli, tdir, wl)
    rdir = os.path.join(work, "rec")
    run([cli, "record", "-o", rdir, "--", cli, "replay", wl, "--timing", "off", "--think", "off"])
    rp = root_process(cli, rdir)
    if os.path.basename(rp["exe"]) != "alloctrace-replay" or rp["exec_seq"] != 1:
        errs.append("the replay's last image is %s (exec %d), not the runner executed once"
                    % (rp["exe"], rp["exec_seq"]))
    if rp["other_calls"]["malloc_usable_size"] != XCALLS_OPS["malloc_usable_size"]:
        errs.append("the runner's image made %r of the program's other calls"
                    % rp["other_calls"])
    # tests/progs/gaps: 300 mallocs and frees on its one thread
    gdir = os.path.join(work, "gaps")
    run([cli, "record", "-o", gdir, "--", os.path.join(build, "tests", "progs", "gaps"), "300", "0"])
    gwl = os.path.join(work, "g.wl")
    calls = convert(cli, gdir, gwl)["calls"]
    grec = os.path.join(work, "grec")
    run([cli, "record", "-o", grec, "--", cli, "replay", gwl, "--timing", "off", "--think", "off"])
    rp = root_process(cli, grec)
    main = sum(t["calls"] for t in rp["thread_stats"] if t["tid"] == rp["pid"])
    rest = sum(t["calls"] for t in rp["thread_stats"] if t["tid"] != rp["pid"])
    if calls < 600 or main < calls or rest >= calls / 10:
        errs.append("the workload's %d calls: %d on the replay's main thread, %d on others "
                    "(its one thread belongs on the main thread)" % (calls, main, rest))
    return errs


def sanitized(build):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return "ALLOCTRACE_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("case", nargs="?", choices=CASES)
    a = ap.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    if not a.build or not a.case:
        ap.error("--build and a case are required")
    if sanitized(a.build):
        print("skipped: an ASan build replays under ASan's allocator, not glibc's")
        return 77
    build = os.path.abspath(a.build)
    cli = os.path.join(build, "alloctrace")
    with tempfile.TemporaryDirectory(prefix="atr-xreplay-") as work:
        try:
            errs = globals()["case_" + a.case](cli, build, work)
        except Failure as e:
            errs = [str(e)]
    if errs is None:
        return 77
    if errs:
        print("FAIL %s\n%s" % (a.case, "\n".join(errs)))
        return 1
    print("ok   %s" % a.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
