#!/usr/bin/env python3
"""run_progs.py - run the deterministic programs of tests/progs/ under
`alloctrace record` and compare what `alloctrace info --json` counted with
what each process says it did.

Every program prints one JSON line per process (the kill test and closefds
write theirs to a file):
    {"prog":..., "pid":N, "calls":{ten counts}, "threads":N, ...}
For each case this script

  1. runs the program untraced: it must exit 0 (its own asserts, errno
     values included, hold for plain glibc);
  2. runs it under `alloctrace record -o TMPDIR [record args] -- PROG ARGS`:
     same exit status;
  3. runs `alloctrace info TMPDIR --json` and, process by process (matched by
     pid, and by exec image for programs that exec themselves), requires
     the ten call counts to be exactly equal, lost_records == 0,
     unknown_frees == 0, inherited_frees (fork children freeing the
     parent's blocks) as said, the thread count, free(NULL) count, clean exit,
     exe, marker count and untraced_calls to match; no trace file may be left over
     without an expectation line, nor the reverse.

The kill cases (killme*) SIGKILL a program that allocates in a loop and
check the trace holds every call it reported, and at most one reporting
interval more.

usage: run_progs.py [--build DIR] [--keep] CASE...   (or: all, --list; tests/atr_runner.py)
Exit status 0 when every case passed.  Python 3 standard library only.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import atr_runner
from atr_runner import Failure

CALLS = ["malloc", "free", "calloc", "realloc", "reallocarray", "memalign",
         "posix_memalign", "aligned_alloc", "valloc", "pvalloc"]
# the other traced calls (info --json "other_calls"); 0 unless a program
# says otherwise in its own "other_calls"
XCALLS = ["mmap", "munmap", "mremap", "madvise", "brk", "sbrk", "mallopt", "malloc_trim",
          "malloc_usable_size"]

TIMEOUT = 40


class Case:
    """prog: binary in BUILD/tests/progs; args may hold {out} (a file the
    program writes its expectations to, when out_file).  record_args go to
    `alloctrace record`.  direct: no CLI, the library is preloaded by hand
    with env (ALLOCTRACE_DIR is set to the trace directory unless env
    names ALLOCTRACE_FILE or ALLOCTRACE_DIR itself; {dir} in env values is
    the trace directory, {reldir} the same relative to the case's working
    directory, where direct runs start)."""

    def __init__(self, prog, args=(), record_args=(), env=None, direct=False,
                 out_file=False, roots_only=False, check=None):
        self.prog = prog
        self.args = list(args)
        self.record_args = list(record_args)
        self.env = dict(env or {})
        self.direct = direct
        self.out_file = out_file      # expectations in a file ({out} in args)
        self.roots_only = roots_only  # --no-children: only the root traced
        self.check = check            # extra check(ctx) -> list of errors


def check_errno_same(ctx):
    """calls: the errno values seen traced equal those seen untraced."""
    u = ctx["untraced_expect"][0].get("errno", {})
    t = ctx["expect"][0].get("errno", {})
    if u != t:
        return ["errno values differ between the untraced and the traced run:\n"
                + diff_dicts(u, t, "untraced", "traced")]
    return []


def check_control(ctx):
    errs = []
    for e in ctx["untraced_expect"]:
        if e.get("present") is not False:
            errs.append("untraced run: alloctrace_present() was not 0")
    for e in ctx["expect"]:
        if e.get("present") is not True:
            errs.append("traced run: alloctrace_present() was 0 (tracer not loaded?)")
    return errs


def check_closefds(ctx):
    """The output file holds DATA 1..50, then the expectation line: the
    tracer wrote nothing into descriptors the program reused."""
    errs = []
    text = ctx["out_text"]
    lines = text.split("\n")
    want = ["DATA %d" % i for i in range(1, 51)]
    if lines[:50] != want:
        bad = next((i for i, (a, b) in enumerate(zip(lines, want)) if a != b), None)
        errs.append("closefds output file corrupted: line %s is %r, expected %r"
                    % (bad, lines[bad] if bad is not None and bad < len(lines) else None,
                       want[bad] if bad is not None else None))
    rest = [l for l in lines[50:] if l]
    if len(rest) != 1 or not rest[0].startswith("{"):
        errs.append("closefds output file: expected one JSON line after the DATA lines, got %r"
                    % rest[:5])
    return errs


def check_xlog(ctx, stacks=False):
    """xcalls: dump --json shows every other call as the program logged it
    (its arguments, result and errno), in order; with --stacks each has a
    stack."""
    want = ctx["expect"][0]["xlog"]
    p = run([ctx["cli"], "dump", "--json", ctx["tdir"]], clean_env())
    if p.returncode != 0:
        return ["alloctrace dump --json failed:\n%s" % show(p)]
    got = []
    for line in p.stdout.splitlines():
        line = line.strip().rstrip(",")
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        if ev.get("type") in XCALLS:
            got.append(ev)
    errs = []
    if len(got) != len(want):
        errs.append("dump shows %d other calls, the program made %d:\n%s"
                    % (len(got), len(want), [g["type"] for g in got]))
    for i, (w, g) in enumerate(zip(want, got)):
        bad = {k: (v, g.get(k)) for k, v in w.items() if g.get(k) != v}
        if bad:
            errs.append("other call %d (%s): (want, got) %r" % (i, w["type"], bad))
        if stacks and not g.get("stack"):
            errs.append("other call %d (%s) has no stack" % (i, w["type"]))
    return errs


BUF4 = ["--buffer-kb", "4"]
OFFLOAD_STALLED = {"ALLOCTRACE_OFFLOAD": "2"}
LATER = ["--encode", "later"]
THREAD = ["--encode", "thread"]
LATER_ENV = {"ALLOCTRACE_ENCODE": "later", "ALLOCTRACE_BUFFER_KB": "4"}
NO_CPU = {"ALLOCTRACE_CPU_GAP_US": "0"}
LATER_CAP = 256 << 10  # ALLOCTRACE_LATER_MAX of threads_later_cap_raw

CASES = {
    "calls": Case("calls", check=check_errno_same),
    "calls_buf4": Case("calls", record_args=BUF4, check=check_errno_same),
    "calls_timing": Case("calls", record_args=["--timing"] + BUF4, check=check_errno_same),
    "calls_env": Case("calls", direct=True, check=check_errno_same,
                      env={"ALLOCTRACE_BUFFER_KB": "4", "ALLOCTRACE_TIMING": "1"}),
    "calls_file": Case("calls", direct=True, check=check_errno_same,
                       env={"ALLOCTRACE_FILE": "{dir}/exact.atr"}),
    "threads": Case("threads", ["8"]),
    "threads_1": Case("threads", ["1"]),
    "threads_buf4": Case("threads", ["8"], record_args=BUF4),
    "threads_fork": Case("threads", ["4", "fork"], record_args=BUF4),
    "cxx": Case("cxx"),
    "forker": Case("forker"),
    "forker_buf4": Case("forker", record_args=BUF4),
    "forker_nochildren": Case("forker", record_args=["--no-children"], roots_only=True),
    "execer": Case("execer"),
    "closefds": Case("closefds", ["{out}"], record_args=BUF4, out_file=True,
                     check=check_closefds),
    # control counts records with sync(): no CPU records, which a preempted
    # call (a gap of > 200 us on a loaded machine) would add to its tally
    "control": Case("control", env=NO_CPU, check=check_control),
    "control_nostart": Case("control", ["nostart"], record_args=["--no-start"], env=NO_CPU,
                            check=check_control),
    "control_nostart_env": Case("control", ["nostart"], direct=True,
                                env=dict(NO_CPU, ALLOCTRACE_START="0"), check=check_control),
    "forker_nochildren_env": Case("forker", direct=True, roots_only=True,
                                  env={"ALLOCTRACE_NO_CHILDREN": "1"}),
    "threads_timing": Case("threads", ["4"], record_args=["--timing"]),
    # zstd's fast (negative) levels and no zstd: the same exact counts
    "threads_zstd_fast": Case("threads", ["8"], record_args=["--zstd-level", "-5"] + BUF4),
    "calls_zstd0": Case("calls", record_args=["--zstd-level", "0"] + BUF4, check=check_errno_same),
    # --stacks adds STACK/MODULE records, never a call (docs/STACKS.md)
    "calls_stacks": Case("calls", record_args=["--stacks"] + BUF4, check=check_errno_same),
    "threads_stacks": Case("threads", ["8"], record_args=["--stacks"]),
    "threads_fork_stacks": Case("threads", ["4", "fork"], record_args=["--stacks"] + BUF4),
    "forker_stacks": Case("forker", record_args=["--stacks"]),
    "cxx_stacks": Case("cxx", record_args=["--stacks", "--stack-depth", "8"]),
    "chdir": Case("chdirer", record_args=BUF4),
    "chdir_reldir": Case("chdirer", direct=True,
                         env={"ALLOCTRACE_DIR": "{reldir}", "ALLOCTRACE_BUFFER_KB": "4"}),
    "chdir_relfile": Case("chdirer", direct=True,
                          env={"ALLOCTRACE_FILE": "{reldir}/x.atr", "ALLOCTRACE_BUFFER_KB": "4"}),
    "xcalls": Case("xcalls", check=check_xlog),
    "xcalls_buf4_timing": Case("xcalls", record_args=["--timing"] + BUF4, check=check_xlog),
    "xcalls_stacks": Case("xcalls", record_args=["--stacks"],
                          check=lambda ctx: check_xlog(ctx, stacks=True)),
    "mmthresh": Case("mmthresh"),
    "killme": [],  # run_kill: SIGKILL while allocating
    "killme_buf4": BUF4,
    # blocks handed to the encoder thread (atp_offload.c): =2 is a helper
    # that never encodes, so threads fall back to encoding themselves once
    # ATP_INFLIGHT blocks wait, and a kill leaves them as STAGING units
    "killme_inflight": (BUF4, OFFLOAD_STALLED, ["0", "thread"]),
    "threads_inflight": Case("threads", ["8"], record_args=BUF4, env=OFFLOAD_STALLED),
    "threads_fork_inflight": Case("threads", ["4", "fork"], record_args=BUF4,
                                  env=OFFLOAD_STALLED),
    "threads_offload_off": Case("threads", ["8"], record_args=BUF4,
                                env={"ALLOCTRACE_OFFLOAD": "0"}),
    # the encoder thread itself (opt-in): exact counts with it encoding
    "threads_offload_on": Case("threads", ["8"], record_args=BUF4,
                               env={"ALLOCTRACE_OFFLOAD": "1"}),
    "threads_fork_offload_on": Case("threads", ["4", "fork"], record_args=BUF4,
                                    env={"ALLOCTRACE_OFFLOAD": "1"}),
    # deferred encoding (record's default, --encode later): full blocks
    # copied raw to the file as STAGING units, frames made after the
    # program by the compaction; read raw (direct runs: nobody compacts)
    # and compacted (record), exact counts either way
    "calls_later": Case("calls", record_args=LATER + BUF4, check=check_errno_same),
    "threads_later": Case("threads", ["8"], record_args=LATER + BUF4),
    "threads_fork_later": Case("threads", ["4", "fork"], record_args=LATER + BUF4),
    "forker_later": Case("forker", record_args=LATER + BUF4),
    "calls_later_raw": Case("calls", direct=True, check=check_errno_same, env=LATER_ENV),
    "threads_later_raw": Case("threads", ["8"], direct=True, env=LATER_ENV),
    "threads_fork_later_raw": Case("threads", ["4", "fork"], direct=True, env=LATER_ENV),
    "forker_later_raw": Case("forker", direct=True, env=LATER_ENV),
    # past ALLOCTRACE_LATER_MAX, full blocks are encoded in the thread
    "threads_later_cap_raw": Case("threads", ["8"], direct=True, check=lambda ctx: check_later_cap(ctx),
                                  env=dict(LATER_ENV, ALLOCTRACE_LATER_MAX=str(LATER_CAP))),
    "killme_later": (LATER + BUF4, None, ["0", "thread"]),
    # raw, then the crash windows of a copy made on the raw file
    "killme_later_raw": (None, LATER_ENV, ["0", "thread"]),
    # blocks encoded by the thread that filled them (--encode thread)
    "calls_encode_thread": Case("calls", record_args=THREAD + BUF4, check=check_errno_same),
    "threads_encode_thread": Case("threads", ["8"], record_args=THREAD + BUF4),
    "threads_fork_encode_thread": Case("threads", ["4", "fork"], record_args=THREAD + BUF4),
    "killme_encode_thread": (THREAD + BUF4, None, ["0", "thread"]),
}


# ---- helpers -------------------------------------------------------------

def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("ALLOCTRACE_")
           and not k.startswith("MTRACE_CTL")}
    env.update(extra or {})
    return env


def diff_dicts(want, got, wname="expected", gname="got", keys=None):
    keys = keys or sorted(set(want) | set(got))
    rows = ["    %-28s %14s %14s" % ("", wname, gname)]
    for k in keys:
        w, g = want.get(k, "-"), got.get(k, "-")
        mark = "" if w == g else "   <-- differs"
        rows.append("    %-28s %14s %14s%s" % (k, w, g, mark))
    return "\n".join(rows)


def parse_lines(text, what):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            out.append(json.loads(line))
        except ValueError as e:
            raise Failure("%s: bad JSON line %r: %s" % (what, line, e))
    return out


def run(cmd, env, timeout=TIMEOUT, cwd=None):
    try:
        return subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, errors="replace")
    except subprocess.TimeoutExpired as e:
        raise Failure("timed out after %ss: %s\nstdout: %s\nstderr: %s"
                      % (timeout, " ".join(cmd), e.stdout, e.stderr))


def show(p):
    return "exit status %s\n--- stdout ---\n%s--- stderr ---\n%s" % (
        p.returncode, p.stdout, p.stderr)


def info(cli, tdir):
    p = run([cli, "info", tdir, "--json"], clean_env())
    if p.returncode != 0:
        raise Failure("alloctrace info %s --json failed:\n%s" % (tdir, show(p)))
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        raise Failure("alloctrace info --json: not JSON (%s):\n%s" % (e, p.stdout[:2000]))
    procs = doc.get("processes")
    if not isinstance(procs, list):
        raise Failure("alloctrace info --json: no \"processes\" list:\n%s" % p.stdout[:2000])
    return procs


def image_of(proc):
    """The exec image number of a process entry (0 for the first image)."""
    for k in ("exec_seq", "image", "exec"):
        if isinstance(proc.get(k), int):
            return proc[k]
    f = proc.get("file") or proc.get("path") or ""
    m = re.search(r"\.(\d+)\.atr$", f)
    return int(m.group(1)) if m else 0


def compare(expect, procs, tdir, roots_only=False):
    """Errors for every mismatch between the expectation lines and info."""
    errs = []
    by_key = {}
    for p in procs:
        key = (p.get("pid"), image_of(p))
        if key in by_key:
            errs.append("two process entries for pid %s image %s" % key)
        by_key[key] = p
    files = sorted(f for f in os.listdir(tdir) if f.endswith(".atr"))
    want_keys = set()
    for e in expect:
        key = (e["pid"], e.get("image", 0))
        if roots_only and not e.get("root", True):
            if key in by_key:
                errs.append("pid %s (%s) was traced although --no-children was given"
                            % (e["pid"], e.get("role")))
            continue
        want_keys.add(key)
        p = by_key.get(key)
        label = "pid %s%s%s" % (e["pid"], " image %d" % key[1] if key[1] else "",
                                " (%s)" % e["role"] if e.get("role") else "")
        if p is None:
            errs.append("%s: no process in `alloctrace info` (trace files: %s; info pids: %s)"
                        % (label, files, sorted(by_key)))
            continue
        got = p.get("calls") or {}
        want = e["calls"]
        if any(got.get(k) != want[k] for k in CALLS) or set(got) - set(CALLS):
            errs.append("%s: call counts differ:\n%s" % (label, diff_dicts(want, got, keys=CALLS + sorted(set(got) - set(CALLS)))))
        xgot = p.get("other_calls") or {}
        xwant = dict((k, 0) for k in XCALLS)
        xwant.update(e.get("other_calls") or {})
        if xgot != xwant:
            errs.append("%s: other call counts differ:\n%s" % (label, diff_dicts(xwant, xgot)))
        for k in ("lost_records", "unknown_frees"):
            if p.get(k) != 0:
                errs.append("%s: %s = %r, expected 0" % (label, k, p.get(k)))
        if "threads" in e and p.get("threads") != e["threads"]:
            errs.append("%s: threads = %r, expected %r" % (label, p.get("threads"), e["threads"]))
        if "ppid" in e and "ppid" in p and p["ppid"] != e["ppid"]:
            errs.append("%s: ppid = %r, expected %r" % (label, p["ppid"], e["ppid"]))
        if "inherited_frees" in p and p["inherited_frees"] != e.get("inherited_frees", 0):
            errs.append("%s: inherited_frees = %r, expected %r"
                        % (label, p["inherited_frees"], e.get("inherited_frees", 0)))
        if "free_null" in e and p.get("free_null") != e["free_null"]:
            errs.append("%s: free_null = %r, expected %r" % (label, p.get("free_null"),
                                                             e["free_null"]))
        want_clean = e.get("clean_exit", True)
        if clean_exit_of(p) != want_clean:
            errs.append("%s: clean exit = %r, expected %r (status %r)"
                        % (label, clean_exit_of(p), want_clean, p.get("status")))
        # untraced_calls: calls the tracer passed through while inside
        # itself; only glibc's own nested calls (the program says which)
        for k, want_v in (("truncated", False), ("untraced_calls", e.get("untraced_calls", 0))):
            if k in p and p[k] != want_v:
                errs.append("%s: %s = %r, expected %r" % (label, k, p[k], want_v))
        exe = os.path.basename(str(p.get("exe")))
        if exe != e["prog"]:
            errs.append("%s: exe = %r, expected .../%s" % (label, p.get("exe"), e["prog"]))
        if "markers" in e and "markers" in p and p["markers"] != len(e["markers"]):
            errs.append("%s: markers = %r, expected %d (%s)" % (label, p["markers"],
                                                                len(e["markers"]), e["markers"]))
    extra = sorted(set(by_key) - want_keys)
    if extra:
        errs.append("processes in the trace that printed no expectation: %s"
                    % ", ".join("pid %s image %s (%s)" % (k[0], k[1], by_key[k].get("exe"))
                                for k in extra))
    return errs


# ---- the cases -------------------------------------------------------------

def run_case(c, case):
    cli = c.alloctrace
    prog = c.prog(case.prog)
    for f in (cli, prog):
        if not os.access(f, os.X_OK):
            raise Failure("missing executable %s (build the tree first)" % f)
    work = c.tmp
    ctx = {}
    out = os.path.join(work, "out.txt")
    args = [a.replace("{out}", out) for a in case.args]

    # 1. untraced: the program's own asserts hold on plain glibc
    p = run([prog] + args, clean_env())
    if p.returncode != 0:
        raise Failure("untraced run of %s failed:\n%s" % (prog, show(p)))
    text = open(out).read() if case.out_file else p.stdout
    ctx["untraced_expect"] = parse_lines(text, "untraced run")
    if not ctx["untraced_expect"]:
        raise Failure("untraced run printed no expectation line:\n%s" % show(p))

    # 2. traced
    tdir = os.path.join(work, "trace")
    os.mkdir(tdir)
    if case.direct:
        env = {k: v.replace("{dir}", tdir).replace("{reldir}", os.path.basename(tdir))
               for k, v in case.env.items()}
        if "ALLOCTRACE_FILE" not in env and "ALLOCTRACE_DIR" not in env:
            env["ALLOCTRACE_DIR"] = tdir
        env["LD_PRELOAD"] = c.lib
        cmd = [prog] + args
        p = run(cmd, clean_env(env), cwd=work)
        cmd = ["%s=%s" % kv for kv in sorted(env.items())] + cmd
    else:
        cmd = [cli, "record", "-o", tdir] + case.record_args + ["--", prog] + args
        p = run(cmd, clean_env(case.env))
    if p.returncode != 0:
        raise Failure("traced run failed (%s):\n%s" % (" ".join(cmd), show(p)))
    text = open(out).read() if case.out_file else p.stdout
    ctx["out_text"] = text
    ctx["expect"] = parse_lines(text, "traced run")
    ctx["record"] = p
    ctx["cli"] = cli
    ctx["tdir"] = tdir
    if not ctx["expect"]:
        raise Failure("traced run printed no expectation line:\n%s" % show(p))
    if ctx.get("untraced_expect") and len(ctx["expect"]) != len(ctx["untraced_expect"]):
        raise Failure("the traced run printed %d expectation lines, the untraced one %d"
                      % (len(ctx["expect"]), len(ctx["untraced_expect"])))

    # 3. info
    procs = info(cli, tdir)
    errs = compare(ctx["expect"], procs, tdir, case.roots_only)
    if case.check:
        errs += case.check(ctx)
    if errs:
        raise Failure("\n".join(errs) + "\n--- stderr of the traced run ---\n" + p.stderr
                      + "--- info --json ---\n" + json.dumps(procs, indent=1)[:6000])


REPORT = 1000  # killme.c


def run_kill(c, record_args, env=None, prog_args=()):
    """SIGKILL a program that allocates in a loop; its trace must still open
    and hold every call it reported, and at most one reporting interval
    more.  env: settings for the program (through record); prog_args after
    killme's OUTFILE ("0 thread": an idle second thread, whose creation
    makes one calloc)."""
    cli = c.alloctrace
    prog = c.prog("killme")
    for f in (cli, prog):
        if not os.access(f, os.X_OK):
            raise Failure("missing executable %s (build the tree first)" % f)
    work = c.tmp
    out = os.path.join(work, "progress.txt")
    tdir = os.path.join(work, "trace")
    os.mkdir(tdir)
    direct = record_args is None  # preloaded by hand: the raw file stays
    if direct:
        env = dict(env or {}, LD_PRELOAD=c.lib, ALLOCTRACE_DIR=tdir)
        cmd = [prog, out] + list(prog_args)
    else:
        cmd = [cli, "record", "-o", tdir] + record_args + ["--", prog, out] + list(prog_args)
    rec = subprocess.Popen(cmd, env=clean_env(env), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    pid, started = None, None
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            if os.path.exists(out):
                text = open(out).read()
                m = re.match(r"PID (\d+)\n", text)
                if m and "ITER" in text:
                    pid = int(m.group(1))
                    if started is None:
                        started = time.monotonic()
                    if time.monotonic() - started >= 0.5:
                        break
            if rec.poll() is not None:
                break
            time.sleep(0.02)
        if pid is None or rec.poll() is not None:
            rec.kill()
            so, se = rec.communicate()
            raise Failure("killme did not start reporting (status %s):\n%s%s"
                          % (rec.returncode, so, se))
        os.kill(pid, signal.SIGKILL)
        so, se = rec.communicate(timeout=TIMEOUT)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    text = open(out).read()
    iters = [int(x) for x in re.findall(r"^ITER (\d+)$", text, re.M)]
    if not iters:
        raise Failure("no progress reported")
    done = iters[-1]
    errs = []
    if direct and rec.returncode != -signal.SIGKILL:
        errs.append("the program exited %d, not killed by SIGKILL" % rec.returncode)
    elif not direct and rec.returncode != 128 + signal.SIGKILL:
        errs.append("alloctrace record exited %d; the program was killed by SIGKILL, so "
                    "128+9 = 137 was expected" % rec.returncode)
    procs = info(cli, tdir)
    mine = [p for p in procs if p.get("pid") == pid]
    if len(mine) != 1:
        raise Failure("expected one process entry for pid %d, got %r" % (pid, procs))
    p = mine[0]
    calls = p.get("calls") or {}
    for k in ("malloc", "free"):
        n = calls.get(k)
        if not isinstance(n, int) or not done <= n <= done + REPORT:
            errs.append("%s = %r: the program reported %d iterations done, so expected "
                        "%d..%d" % (k, n, done, done, done + REPORT))
    if isinstance(calls.get("malloc"), int) and isinstance(calls.get("free"), int) \
            and calls["malloc"] - calls["free"] not in (0, 1):
        errs.append("malloc - free = %d, expected 0 or 1"
                    % (calls["malloc"] - calls["free"]))
    others = {k: v for k, v in calls.items() if k not in ("malloc", "free") and v}
    if "thread" in prog_args and others.get("calloc") == 1:
        del others["calloc"]  # pthread_create's
    if others:
        errs.append("unexpected calls: %r" % others)
    for k in ("lost_records", "unknown_frees"):
        if p.get(k) != 0:
            errs.append("%s = %r, expected 0" % (k, p.get(k)))
    clean = clean_exit_of(p)
    if clean is None:
        errs.append("info --json says nothing about a clean exit (keys: %s)"
                    % sorted(p))
    elif clean:
        errs.append("the trace of a SIGKILLed process claims a clean exit: %r" % p)
    if direct and not errs:
        errs += crash_windows(cli, tdir, p)
    if errs:
        raise Failure("\n".join(errs) + "\n--- record stderr ---\n" + se
                      + "--- info --json ---\n" + json.dumps(procs, indent=1)[:4000])


def trace_units(data):
    """(kind, thread, seq, offset) of each unit of a version-2 trace file
    (docs/TRACE_FORMAT.md, "Units"): 2 STAGING, 3 RETIRED, 4 FRAME."""
    import struct
    hs, bs = struct.unpack_from("<I", data, 12)[0], struct.unpack_from("<I", data, 24)[0]
    off, out = hs, []
    while off + 64 <= len(data):
        if struct.unpack_from("<Q", data, off)[0] == 0:
            off += 8
            continue
        kind, thread = struct.unpack_from("<II", data, off + 4)
        out.append((kind, thread, struct.unpack_from("<Q", data, off + 16)[0], off))
        off += 64 + ((struct.unpack_from("<I", data, off + 36)[0] + 7) & ~7) if kind == 4 else bs
    return out



def check_later_cap(ctx):
    """ALLOCTRACE_LATER_MAX: full blocks are copied raw until the file
    reaches the cap, then encoded in the thread: each file has raw copies
    (more STAGING units than threads) below the cap and FRAMEs."""
    errs = []
    for name in sorted(os.listdir(ctx["tdir"])):
        if not name.endswith(".atr"):
            continue
        units = trace_units(open(os.path.join(ctx["tdir"], name), "rb").read())
        staging = [u for u in units if u[0] == 2]
        frames = [u for u in units if u[0] == 4]
        threads = {u[1] for u in units}
        if not frames or len(staging) <= len(threads):
            errs.append("%s: %d STAGING units, %d FRAMEs, %d threads: want raw copies "
                        "and frames" % (name, len(staging), len(frames), len(threads)))
        late = [u for u in staging if u[3] > LATER_CAP + (64 << 10)]
        if len(late) > len(threads):
            errs.append("%s: %d STAGING units past the cap of %d bytes (threads %d)"
                        % (name, len(late), LATER_CAP, len(threads)))
    return errs


def crash_windows(cli, tdir, p):
    """ALLOCTRACE_ENCODE=later copies a full staging block to a new unit
    (header kind RETIRED, records, then kind STAGING) and then moves the
    block on to the next seq (src/preload/atp_writer.c, copy_block).  Make
    the files a kill -9 leaves in between from the raw trace p.path: a
    copy of each thread's current STAGING unit appended, complete (killed
    before the reset: two STAGING units with one seq) or cut short and
    still RETIRED (killed during the copy).  info must count the same."""
    import struct
    path = p["path"]
    data = open(path, "rb").read()
    bs = struct.unpack_from("<I", data, 24)[0]
    cur = {}
    for kind, thread, seq, off in trace_units(data):
        if kind == 2 and seq >= cur.get(thread, (-1, 0))[0]:
            cur[thread] = (seq, off)
    if not cur:
        return ["%s: no STAGING unit to copy" % path]
    errs = []
    for name, cut, kind in (("copied, not yet reset", bs, 2), ("copy cut short", bs // 2, 3)):
        img = bytearray(data)
        for seq, at in cur.values():
            img += bytes(-len(img) % 4096)
            unit = bytearray(data[at:at + bs])
            struct.pack_into("<I", unit, 4, kind)
            img += unit[:cut]
        alt = os.path.join(os.path.dirname(tdir), "window.atr")
        open(alt, "wb").write(img)
        got = [q for q in info(cli, alt) if q.get("pid") == p.get("pid")]
        os.unlink(alt)
        keys = ("calls", "total_calls", "records", "threads", "lost_records", "lost_blocks")
        want = {k: p.get(k) for k in keys}
        have = {k: got[0].get(k) for k in keys} if len(got) == 1 else {}
        if want != have:
            errs.append("kill -9 %s: info reads %r, the trace without it %r" % (name, have, want))
    return errs


def clean_exit_of(p):
    """True/False from whatever info reports about a clean exit, or None."""
    for k in ("clean_exit", "exited_cleanly", "clean"):
        if isinstance(p.get(k), bool):
            return p[k]
    st = p.get("status")
    if isinstance(st, list):
        return "clean_exit" in st or "clean-exit" in st
    if isinstance(st, str):
        return "clean" in st and "unclean" not in st and "not clean" not in st
    if isinstance(st, dict) and isinstance(st.get("clean_exit"), bool):
        return st["clean_exit"]
    return None


def run_one(case, c):
    if c.name.startswith("killme"):
        args, env, prog_args = case if isinstance(case, tuple) else (case, None, ())
        return run_kill(c, args, env, prog_args)
    return run_case(c, case)


if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=run_one, tmp_prefix="atr-progs-"))
