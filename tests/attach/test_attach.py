#!/usr/bin/env python3
"""`alloctrace record -p PID` (docs/ATTACH.md).

usage: test_attach.py [--build DIR] CASE...  (or --list; tests/atr_runner.py)

window_net: the same with `-o tcp://` to a collector on loopback: the
collector's file, complete at the detach (the attached tracer sends its
staging blocks and header then), passes the same checks.

window: attach_prog (3 threads, ~2 s of malloc/calloc/realloc/free over
rings of blocks allocated before the attach, counted per 100 ms window)
gets attached to for 0.5 s.  Checked: the program exits 0 (its blocks are
intact, so the attach did no harm); the trace is marked attached, has
calls, 0 lost records, 0 unknown frees and > 0 pre-attach frees; for each
call type the traced count lies between the program's count over the
windows entirely inside the attach window and over the windows touching it,
with 20 ms of margin against a thread preempted between its clock read
and its call (`record` prints the window: start lo..hi, end lo..hi, CLOCK_MONOTONIC).

single: 5 times, attach_busy (single-threaded, nothing but malloc and free,
so it is mostly stopped inside malloc, which then takes no lock; it runs
until SIGUSR1, sent once `record` returned) gets attached to for 0.1 s:
it must exit 0 (its blocks intact, the heap not corrupted) and the trace
must show its calls and no unknown frees.

dlopen: attach_dl dlopens attach_mod 0.4 s into a 1.6 s attach and calls
its malloc(777)/free pair every 0.5 ms: the module's GOT is patched by the
periodic maps scan, so most of its pairs made while attached are traced.

fpu: 3 times, attach_fp is attached to in the middle of a long chain of
double arithmetic held in SSE registers: the result must be bit-identical
to the same chain computed before (the remote calls restore the x87/SSE/
AVX state, not only the general registers).

sample: `record -p --sample 4096` on attach_busy: the trace says it is
sampled at that rate, the program is unharmed, no unknown frees.

nopie: attach_nopie, a non-PIE program that takes the addresses of malloc,
free and valloc (canonical PLT entries, as Debian's python3.11 has) and
calls half its mallocs and frees through those pointers: all of its calls
are traced (malloc and free counts agree, no warning); valloc, first
called only once attached (its GOT entry still unresolved at the attach),
is traced too; with --stacks the trace has the allocations' stacks.

python: Debian's /usr/bin/python3 (python3.11: non-PIE, malloc and free
with canonical PLT entries) idles on stdin, gets attached to, then runs K
iterations of a loop whose buffers are malloc'ed: the attached trace holds
exactly the malloc and free calls that K more iterations add to an
LD_PRELOAD recording of the same script (+-1%); the same with --stacks,
whose trace has stacks through the interpreter.

xcalls: attach_x loops over mmap/mmap64 + munmap of 64 KiB,
malloc_usable_size, and every 16th time mallopt + malloc_trim, until
SIGUSR1; attached to for 0.4 s, the trace must hold those calls (the other
calls, docs/TRACE_FORMAT.md "Extended calls"): each kind > 0 and at most
what the program made, mmap and munmap within one of each other (every
other mmap goes through mmap64: both names are redirected), every mmap of
64 KiB, and 0 unknown frees.

errors: a missing pid, -p with a program, --duration without -p, a second
attach to the same process, a process that is already preloaded, Ctrl-C
(SIGINT) ending an attach without --duration, and (as root) an unprivileged
attach, which must fail with a message naming the permission problem.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import atr_runner  # noqa: E402
from atr_runner import fail, skip  # noqa: E402

NTHREADS, RING = 3, 64


def start_prog(prog, out, run_ms, *extra):
    p = subprocess.Popen([prog, out, str(run_ms)] + list(extra), stdout=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        fail("attach_prog did not start: %r" % line)
    return p


def record(at, args, timeout=20):
    return subprocess.run([at, "record"] + args, capture_output=True, text=True, timeout=timeout)


def check_permission(r):
    if r.returncode != 0 and "not permitted" in r.stderr:
        fail("ptrace is not permitted in this environment, so attaching cannot be "
             "tested: " + r.stderr.strip())


def info(at, d):
    r = subprocess.run([at, "info", d, "--json"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail("info failed: %s" % r.stderr)
    return json.loads(r.stdout)["processes"]


def start_collector(at, tdir, tmp):
    """`alloctrace collect` on a free loopback port: (process, port, log)"""
    log = open(os.path.join(tmp, "collect.log"), "w+")
    c = subprocess.Popen([at, "collect", "--listen", "127.0.0.1:0", "-o", tdir],
                         stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log.name).read())
        if m:
            return c, int(m.group(1)), log.name
        time.sleep(0.02)
    c.kill()
    fail("the collector did not start")


def case_window(at, prog, tmp, net=False):
    out = os.path.join(tmp, "counts.txt")
    tdir = os.path.join(tmp, "trace")
    dest = tdir
    if net:
        col, port, clog = start_collector(at, tdir, tmp)
        dest = "tcp://127.0.0.1:%d" % port
    p = start_prog(prog, out, 2000)
    time.sleep(0.3)
    r = record(at, ["-p", str(p.pid), "-o", dest, "--duration", "0.5"])
    check_permission(r)
    if r.returncode != 0:
        p.kill()
        fail("record -p failed (%d): %s" % (r.returncode, r.stderr))
    if net:
        # the stream ended at the detach: the file is whole before the
        # program exits
        deadline = time.time() + 10
        while time.time() < deadline and " bytes -> " not in open(clog).read():
            time.sleep(0.05)
        col.terminate()
        col.wait(10)
        text = open(clog).read()
        if " bytes -> " not in text or "spool" in r.stderr:
            fail("the attached stream did not end at the detach:\n%s\n%s" % (text, r.stderr))
    try:
        rc = p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the program did not finish after the detach")
    if rc != 0:
        fail("the program exited %d after the attach (harmed)" % rc)
    m = re.search(r"attach window \(CLOCK_MONOTONIC ns\): start (\d+)\.\.(\d+), end (\d+)\.\.(\d+)",
                  r.stderr)
    if not m:
        fail("no attach window in record's output: %s" % r.stderr)
    a_lo, a_hi, b_lo, b_hi = map(int, m.groups())
    procs = info(at, tdir)
    if len(procs) != 1:
        fail("expected 1 trace, got %d" % len(procs))
    s = procs[0]
    print("calls", s["calls"], "pre_attach_frees", s.get("pre_attach_frees"),
          "window", (b_lo - a_hi) / 1e9, "s")
    if not s.get("attached") or "attached" not in s["status"]:
        fail("trace not marked attached: %s" % s["status"])
    if s["total_calls"] <= 0:
        fail("no calls recorded")
    for k in ("lost_records", "lost_blocks", "unknown_frees", "untraced_calls"):
        if s[k] != 0:
            fail("%s = %d, expected 0" % (k, s[k]))
    if s["pre_attach_frees"] <= 0:
        fail("no pre-attach frees counted")
    lines = open(out).read().split("\n")
    win = int(lines[0].split()[1])
    rows = [list(map(int, l.split())) for l in lines[1:] if l.strip()]
    # A call is counted in the window of the time read just before it; a
    # thread preempted between that read and the call could cross a window
    # edge, so 20 ms of margin where that matters: at the end of the lower
    # bound and at the start of the upper bound.
    margin = 20000000
    for col, name in ((1, "malloc"), (2, "calloc"), (3, "realloc"), (4, "free")):
        lo = sum(r_[col] for r_ in rows if r_[0] >= a_hi and r_[0] + win + margin <= b_lo)
        hi = sum(r_[col] for r_ in rows if r_[0] + win + margin > a_lo and r_[0] < b_hi)
        got = s["calls"][name]
        print("%-8s traced %d, program: >= %d (windows inside), <= %d (windows touching)"
              % (name, got, lo, hi))
        if lo == 0 or not lo <= got <= hi:
            fail("%s: %d traced calls outside [%d, %d]" % (name, got, lo, hi))
    live = s["live_blocks_at_end"]
    if not NTHREADS * (RING - 1) <= live <= NTHREADS * RING:
        fail("live blocks at the detach: %d, expected about %d" % (live, NTHREADS * RING))


def case_single(at, busy, tmp):
    for i in range(5):
        # runs until told to stop (SIGUSR1), so a slow attach on a loaded
        # machine never races the program's own end
        p = subprocess.Popen([busy, "20000"], stdout=subprocess.PIPE, text=True)
        if p.stdout.readline().strip() != "ready":
            fail("attach_busy did not start")
        time.sleep(0.15)
        tdir = os.path.join(tmp, "s%d" % i)
        r = record(at, ["-p", str(p.pid), "-o", tdir, "--duration", "0.1"])
        alive = p.poll() is None
        if alive:
            p.send_signal(signal.SIGUSR1)
        else:
            p.wait()
        check_permission(r)
        rc = p.wait(timeout=15)
        if not alive:
            fail("run %d: attach_busy ended during the attach (%d): %s" % (i, rc, r.stderr))
        if r.returncode != 0:
            fail("run %d: record -p failed (%d): %s" % (i, r.returncode, r.stderr))
        if rc != 0:
            fail("run %d: the program exited %d after the attach (harmed)" % (i, rc))
        s = info(at, tdir)[0]
        if s["calls"]["malloc"] <= 0 or s["unknown_frees"] or s["lost_records"]:
            fail("run %d: %s" % (i, json.dumps(s)[:400]))
        shutil.rmtree(tdir)
    print("5 attaches to a program busy in malloc: unharmed")


def attach_until(at, args, prog, action):
    """record -p prog until `action` (run once the GOT is redirected)
    returned; Ctrl-C then ends it.  Returns record's stderr."""
    rec = subprocess.Popen([at, "record", "-p", str(prog.pid)] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    err = []
    for line in rec.stderr:
        err.append(line)
        if "attached to process" in line:
            break
    else:
        rec.wait(timeout=20)
        check_permission(subprocess.CompletedProcess([], rec.returncode, "", "".join(err)))
        prog.kill()
        fail("record -p did not attach: %s" % "".join(err))
    action()
    rec.send_signal(signal.SIGINT)
    o, e = rec.communicate(timeout=30)
    err.append(e)
    if rec.returncode != 0:
        prog.kill()
        fail("record -p failed (%d): %s" % (rec.returncode, "".join(err)))
    return "".join(err)


def check_stacks(at, tdir, want):
    """The trace has stacks and `want` (a function name) is in one."""
    r = subprocess.run([at, "report", tdir, "--group", "function", "--top", "0"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("report failed: %s" % r.stderr)
    m = re.search(r"call stacks\s+(\d+) with allocations", r.stdout)
    if not m or int(m.group(1)) == 0:
        fail("-p --stacks: no stacks in the trace:\n" + r.stdout[:2000])
    if want not in r.stdout:
        fail("-p --stacks: %s in no stack:\n%s" % (want, r.stdout[:3000]))


def case_nopie(at, nopie, tmp):
    """A non-PIE program that takes the address of malloc, free and
    valloc: its calls reach libc through its own PLT stubs, which the
    attach resolves and redirects too."""
    for stacks in (False, True):
        p = subprocess.Popen([nopie, "20000"], stdout=subprocess.PIPE, text=True)
        if p.stdout.readline().strip() != "ready":
            fail("attach_nopie did not start")
        tdir = os.path.join(tmp, "n%d" % stacks)
        # valloc: called only from now on (SIGUSR2), so its GOT entry is
        # still unresolved (lazy binding) at the attach
        err = attach_until(at, ["-o", tdir] + (["--stacks"] if stacks else []), p,
                           lambda: (p.send_signal(signal.SIGUSR2), time.sleep(0.3)))
        p.send_signal(signal.SIGUSR1)
        if p.wait(timeout=15) != 0:
            fail("attach_nopie was harmed: %s" % err)
        if "not redirected" in err or "NOT traced" in err:
            fail("calls left untraced:\n" + err)
        s = info(at, tdir)[0]
        c = s["calls"]
        print("stacks" if stacks else "plain", "malloc", c["malloc"], "free", c["free"],
              "valloc", c["valloc"], "pre-attach frees", s["pre_attach_frees"])
        # the loop alternates free and malloc (half of each through the
        # pointers; valloc blocks are freed too): equal counts give or take
        # the pair cut by the attach
        if c["malloc"] < 1000 or abs(c["malloc"] + c["valloc"] - c["free"]) > 2 or c["valloc"] < 1:
            fail("calls through the canonical PLT entries not traced: %s" % json.dumps(c))
        if s["unknown_frees"] or s["lost_records"]:
            fail("nopie trace: %s" % json.dumps(s)[:400])
        if stacks:
            check_stacks(at, tdir, "main")


PY_LOOP = """import sys
print("ready", flush=True)
for line in sys.stdin:
    keep = []
    for i in range(int(line)):
        keep.append(bytearray(1000 + i % 1000))  # > 512 bytes: malloc, not pymalloc
        if len(keep) > 64:
            keep.pop(0)
    del keep
    print("done", flush=True)
"""


def case_python(at, tmp):
    py = os.path.realpath("/usr/bin/python3")
    if not os.path.exists(py):
        skip("no /usr/bin/python3")
    script = os.path.join(tmp, "loop.py")
    with open(script, "w") as f:
        f.write(PY_LOOP)
    k = 20000

    def preload(n):
        d = os.path.join(tmp, "pre%d" % n)
        r = subprocess.run([at, "record", "--no-rss", "-o", d, "--", py, script],
                           input="%d\n" % k * n, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail("LD_PRELOAD recording failed: %s" % r.stderr)
        return info(at, d)[0]["calls"]

    one, two = preload(1), preload(2)
    want = {f: two[f] - one[f] for f in ("malloc", "free")}
    print("%s, LD_PRELOAD: %d more iterations add %s" % (py, k, want))
    for stacks in (False, True):
        p = subprocess.Popen([py, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        if p.stdout.readline().strip() != "ready":
            fail("python did not start")

        def run_loop():
            p.stdin.write("%d\n" % k)
            p.stdin.flush()
            if p.stdout.readline().strip() != "done":
                fail("the python loop did not finish")

        tdir = os.path.join(tmp, "py%d" % stacks)
        err = attach_until(at, ["-o", tdir] + (["--stacks"] if stacks else []), p, run_loop)
        p.stdin.close()
        if p.wait(timeout=30) != 0:
            fail("python was harmed by the attach: %s" % err)
        if "not redirected" in err:
            fail("calls left untraced:\n" + err)
        s = info(at, tdir)[0]
        got = {f: s["calls"][f] for f in ("malloc", "free")}
        print("record -p%s: %s" % (" --stacks" if stacks else "", got))
        for f in got:
            if abs(got[f] - want[f]) > want[f] / 100:
                fail("%s: %d traced while attached, LD_PRELOAD says %d" % (f, got[f], want[f]))
        if s["unknown_frees"] or s["lost_records"]:
            fail("python trace: %s" % json.dumps(s)[:400])
        if stacks:
            check_stacks(at, tdir, "PyEval_EvalCode")


def case_dlopen(at, tdir_base, tmp):
    d = os.path.dirname(tdir_base)
    p = subprocess.Popen([os.path.join(d, "attach_dl"), os.path.join(d, "libattach_mod.so"),
                          "600", "2300"], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        fail("attach_dl did not start")
    time.sleep(0.2)
    tdir = os.path.join(tmp, "dl")
    r = record(at, ["-p", str(p.pid), "-o", tdir, "--duration", "1.6"])
    check_permission(r)
    out, _ = p.communicate(timeout=15)
    if r.returncode != 0:
        fail("record -p failed (%d): %s" % (r.returncode, r.stderr))
    if p.returncode != 0:
        fail("attach_dl exited %d" % p.returncode)
    pairs = int(out.split()[-1])
    d_ = subprocess.run([at, "dump", tdir], capture_output=True, text=True, timeout=30)
    mods = d_.stdout.count("malloc(777)")
    # the module is used ~1.2 s of the 1.6 s attach: 2/3 of its ~1.7 s of
    # pairs; a 0.2 s scan delay costs at most 1/8 of them
    print("module pairs made %d, module mallocs traced %d" % (pairs, mods))
    if mods < pairs * 0.4:
        fail("the dlopen'ed module's calls were not traced (%d of %d)" % (mods, pairs))
    s = info(at, tdir)[0]
    if s["unknown_frees"] or s["lost_records"]:
        fail("dlopen trace: %s" % json.dumps(s)[:400])


def case_fpu(at, fp, tmp):
    for i in range(3):
        p = subprocess.Popen([fp], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.stdout.readline().strip() != "ready":
            fail("attach_fp did not start")
        time.sleep(0.1)
        r = record(at, ["-p", str(p.pid), "-o", os.path.join(tmp, "f%d" % i),
                        "--duration", "0.1"])
        check_permission(r)
        _, err = p.communicate(timeout=15)
        if r.returncode != 0:
            fail("run %d: record -p failed (%d): %s" % (i, r.returncode, r.stderr))
        if p.returncode != 0:
            fail("run %d: the program's floating-point state changed: %s" % (i, err))
    print("3 attaches in the middle of SSE arithmetic: results unchanged")


def case_errors(at, prog, tmp):
    # no such process
    q = subprocess.Popen(["true"])
    q.wait()
    r = record(at, ["-p", str(q.pid), "-o", os.path.join(tmp, "t0")])
    if r.returncode != 1 or "no process" not in r.stderr:
        fail("missing pid: %d %s" % (r.returncode, r.stderr))
    r = record(at, ["-p", "1", "--", "true"])
    if r.returncode != 2 or "takes no program" not in r.stderr:
        fail("-p with a program: %d %s" % (r.returncode, r.stderr))
    r = record(at, ["--duration", "1", "--", "true"])
    if r.returncode != 2 or "needs -p" not in r.stderr:
        fail("--duration without -p: %d %s" % (r.returncode, r.stderr))

    # Ctrl-C ends an attach without --duration; then a second attach is refused
    p = start_prog(prog, os.path.join(tmp, "c1.txt"), 2500)
    rec = subprocess.Popen([at, "record", "-p", str(p.pid), "-o", os.path.join(tmp, "t1")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.6)
    rec.send_signal(signal.SIGINT)
    o, e = rec.communicate(timeout=15)
    if rec.returncode != 0 or "detached from process" not in e:
        check_permission(subprocess.CompletedProcess([], rec.returncode, o, e))
        p.kill()
        fail("SIGINT did not end the attach cleanly: %d %s" % (rec.returncode, e))
    r = record(at, ["-p", str(p.pid), "-o", os.path.join(tmp, "t2"), "--duration", "0.2"])
    if r.returncode != 1 or "attaching twice" not in r.stderr:
        p.kill()
        fail("second attach: %d %s" % (r.returncode, r.stderr))
    if p.wait(timeout=15) != 0:
        fail("the program was harmed by the SIGINT-ended attach")
    s = info(at, os.path.join(tmp, "t1"))[0]
    if s["total_calls"] <= 0 or s["lost_records"] or s["unknown_frees"]:
        fail("SIGINT-ended trace: %s" % json.dumps(s)[:400])

    # a process already traced by preloading
    rec = subprocess.Popen([at, "record", "--no-rss", "-o", os.path.join(tmp, "t3"), "--", prog,
                            os.path.join(tmp, "c3.txt"), "1500"],
                           stdout=subprocess.PIPE, text=True)
    if rec.stdout.readline().strip() != "ready":
        fail("preloaded attach_prog did not start")
    kids = open("/proc/%d/task/%d/children" % (rec.pid, rec.pid)).read().split()
    r = record(at, ["-p", kids[0], "-o", os.path.join(tmp, "t4"), "--duration", "0.2"])
    if r.returncode != 1 or "already has" not in r.stderr:
        fail("attach to a preloaded process: %d %s" % (r.returncode, r.stderr))
    if rec.wait(timeout=15) != 0:
        fail("the preloaded program failed")

    # unprivileged: a clear message about the permission
    if os.geteuid() == 0 and os.path.exists("/usr/bin/setpriv"):
        p = start_prog(prog, os.path.join(tmp, "c5.txt"), 1500)
        os.chmod(tmp, 0o777)
        r = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                            "--clear-groups", at, "record", "-p", str(p.pid), "-o",
                            os.path.join(tmp, "t5"), "--duration", "0.2"],
                           capture_output=True, text=True, timeout=20)
        p.wait(timeout=15)
        if r.returncode != 1 or "not permitted" not in r.stderr:
            fail("unprivileged attach: %d %s" % (r.returncode, r.stderr))
        print("unprivileged:", r.stderr.strip())


def case_sample(at, busy, tmp):
    """record -p --sample: the rate reaches the tracer (trace header), the
    program is unharmed, and frees of blocks from before the attach are not
    recorded (they were never sampled)."""
    p = subprocess.Popen([busy, "20000"], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        fail("attach_busy did not start")
    time.sleep(0.15)
    tdir = os.path.join(tmp, "smp")
    r = record(at, ["-p", str(p.pid), "-o", tdir, "--sample", "4096", "--duration", "0.3"])
    alive = p.poll() is None
    if alive:
        p.send_signal(signal.SIGUSR1)
    check_permission(r)
    rc = p.wait(timeout=15)
    if r.returncode != 0 or rc != 0 or not alive:
        fail("record -p --sample: record %d, program %d, alive %s: %s" % (r.returncode, rc, alive, r.stderr))
    rep = subprocess.run([at, "report", "--json", tdir], capture_output=True, text=True)
    if rep.returncode != 0:
        fail("report: " + rep.stderr)
    s = json.loads(rep.stdout)["processes"][0]
    if s["sample_rate"] != 4096 or not s["estimated"]:
        fail("sample_rate %r estimated %r" % (s["sample_rate"], s["estimated"]))
    if s["calls"]["malloc"] <= 0 or s["unknown_frees"]:
        fail("sampled attach: %s" % json.dumps(s)[:400])
    print("record -p --sample 4096: %d estimated mallocs" % s["calls"]["malloc"])


def case_xcalls(at, xprog, tmp):
    p = subprocess.Popen([xprog, "20000"], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        fail("attach_x did not start")
    time.sleep(0.15)
    tdir = os.path.join(tmp, "x")
    r = record(at, ["-p", str(p.pid), "-o", tdir, "--duration", "0.4"])
    alive = p.poll() is None
    if alive:
        p.send_signal(signal.SIGUSR1)
    check_permission(r)
    out, _ = p.communicate(timeout=15)
    if r.returncode != 0 or p.returncode != 0 or not alive:
        fail("record -p: record %d, program %d, alive %s: %s" % (r.returncode, p.returncode,
                                                                 alive, r.stderr))
    made = dict(zip(*[iter(out.split())] * 2))
    made = {k: int(v) for k, v in made.items()}
    s = info(at, tdir)[0]
    oc = s["other_calls"]
    got = {"mmap": oc["mmap"], "munmap": oc["munmap"], "usable": oc["malloc_usable_size"],
           "mallopt": oc["mallopt"], "trim": oc["malloc_trim"]}
    for k, v in got.items():
        if not 0 < v <= made[k]:
            fail("%s: %d traced, the program made %d (%r)" % (k, v, made[k], got))
    if abs(got["mmap"] - got["munmap"]) > 1 or s["unknown_frees"]:
        fail("attached trace: %r, unknown frees %d" % (got, s["unknown_frees"]))
    d = subprocess.run([at, "dump", "--json", tdir], capture_output=True, text=True)
    sizes = [json.loads(l.rstrip(",")).get("size") for l in d.stdout.splitlines()
             if '"type":"mmap"' in l.replace(" ", "")]
    if len(sizes) != got["mmap"] or set(sizes) != {65536}:
        fail("dump: mmap sizes %r" % sizes[:10])
    print("record -p: %r of %r other calls traced" % (got, made))


def attach_prog(c, name="attach_prog"):
    return c.prog(name, "attach")


CASES = {
    "window": lambda c: case_window(c.alloctrace, attach_prog(c), c.tmp),
    "window_net": lambda c: case_window(c.alloctrace, attach_prog(c), c.tmp, net=True),
    "single": lambda c: case_single(c.alloctrace, attach_prog(c, "attach_busy"), c.tmp),
    "dlopen": lambda c: case_dlopen(c.alloctrace, attach_prog(c), c.tmp),
    "fpu": lambda c: case_fpu(c.alloctrace, attach_prog(c, "attach_fp"), c.tmp),
    "errors": lambda c: case_errors(c.alloctrace, attach_prog(c), c.tmp),
    "nopie": lambda c: case_nopie(c.alloctrace, attach_prog(c, "attach_nopie"), c.tmp),
    "sample": lambda c: case_sample(c.alloctrace, attach_prog(c, "attach_busy"), c.tmp),
    "python": lambda c: case_python(c.alloctrace, c.tmp),
    "xcalls": lambda c: case_xcalls(c.alloctrace, attach_prog(c, "attach_x"), c.tmp),
}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, tmp_prefix="atr-attach-"))
