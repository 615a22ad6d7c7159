#!/usr/bin/env python3
"""test_net.py - traces over the network, on loopback
(`record -o tcp://HOST:PORT` -> `alloctrace collect`, docs/NET_FORMAT.md).

  same       the deterministic programs recorded over tcp (small blocks, so
             frames and staging blocks both travel) give the same `info`
             as a file recording, and for the single-threaded one the same
             `dump` (timestamps, pids and raw addresses aside: pointers are
             numbered in order of appearance).
  fork       a program that forks (and whose children fork): one stream
             and one file per process, each with the call counts the
             process itself reports; children are marked fork child.
  exec       a program that execs itself twice: one stream per image, named
             <pid>.atr, <pid>.1.atr, <pid>.2.atr as a local record names them.
  client_killed  the traced program is SIGKILLed mid-stream: the collector
             survives; `record` sends the staging blocks the killed program
             left in its spool, so every call the program reported before
             the kill is in the file (without a clean exit); the collector
             records the next client.
  killed     the collector is SIGKILLed mid-run and never comes back: the
             program still runs to its end with its exit status, and says
             the trace was cut short.
  restart    the collector is SIGKILLed mid-run and started again on the
             same port and directory: the program reconnects and the same
             file goes on.  With a 64 KiB buffer calls are lost meanwhile;
             with 16 MiB none are (what the dead collector never confirmed
             is sent again, what it had written is not written twice).
             Both exact: calls in the file + lost records == the calls the
             program counted.
  resend     a proxy swallows the collector's acknowledgements and then cuts
             the connection: the sender sends everything again, the
             collector skips the frames it has written (exact counts, and
             it says how many it skipped).
  slow       the collector is stopped (SIGSTOP) while the program runs with
             a 64 KiB buffer: the program keeps going (2 M iterations while
             stopped); once the collector resumes, the file reads back, and
             calls in it + lost records == the calls the program made.
  bad_input  garbage, a wrong version, a stream cut inside a message and a
             client that vanishes: a clear message each, the collector keeps
             running, and a good stream afterwards is still written.
  no_collector  nothing listens: the program runs untraced, exit status kept,
             stderr says why.
  compacted  when a stream has ended the collector compacts its file
             (docs/TRACE_FORMAT.md, "Compaction"): no staging block is left,
             the frames were merged and recompressed (header compact_level 9,
             the default; 0 with --compact-level 0: frames as sent), and the
             file reads the calls the program counted, as a local recording
             does; a killed client's file is compacted once `record` has sent
             the rest of its stream.

usage: test_net.py [--build DIR] CASE...   (or --list; tests/atr_runner.py)
"""
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

import atr_runner
from atr_runner import fail

TIMEOUT = 60


class Collector:
    """`alloctrace collect --listen 127.0.0.1:0 -o DIR`, port read from stderr."""

    def __init__(self, build, out, extra=(), port=0, log="collect.log"):
        self.log = open(os.path.join(os.path.dirname(out), log), "w+")
        self.p = subprocess.Popen([os.path.join(build, "alloctrace"), "collect", "--listen",
                                   "127.0.0.1:%d" % port, "-o", out] + list(extra),
                                  stderr=self.log, stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.text())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.02)
        self.p.kill()
        fail("collector did not start:\n" + self.text())

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def wait_streams(self, n, timeout=20):
        """until n connections ended (lines '... bytes -> PATH (...)'),
        continuations included"""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(re.findall(r" bytes -> ", self.text())) >= n:
                return
            time.sleep(0.05)
        fail("collector saw fewer than %d stream(s) end:\n%s" % (n, self.text()))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                fail("collector ignored SIGTERM")
        return self.p.returncode


def record(build, out, prog, args=(), rec=(), env=None, timeout=TIMEOUT):
    cmd = [os.path.join(build, "alloctrace"), "record", "-o", out] + list(rec) + \
        ["--", os.path.join(build, "tests", "progs", prog)] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def info(build, path):
    r = subprocess.run([os.path.join(build, "alloctrace"), "info", "--json", path],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        fail("info %s failed: %s" % (path, r.stderr))
    return json.loads(r.stdout)["processes"]


# max_rss: record samples a file recording's RSS, a collector's stream has
# none (and a short run may have no sample in its time either)
VOLATILE = {"path", "pid", "ppid", "start_realtime_ns", "duration_ns", "wall_ns",
            "ticks_per_sec", "peak_live_ns", "cmdline", "clock_uncalibrated", "max_rss"}


def stable(p):
    d = {k: v for k, v in p.items() if k not in VOLATILE}
    for t in d.get("thread_stats", []):
        t.pop("tid", None)
    return d


def dump_norm(build, path):
    """dump --json without stamps and ids; pointers numbered as they appear."""
    r = subprocess.run([os.path.join(build, "alloctrace"), "dump", "--json", path],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        fail("dump %s failed: %s" % (path, r.stderr))
    names, out = {}, []
    for line in r.stdout.splitlines():
        o = json.loads(line)
        if o.get("type") == "brk":
            continue  # the break moves with the tracer's own mappings
        for k in ("ts_ns", "pid", "tid", "seq", "duration_ns", "recorder_ns"):
            o.pop(k, None)
        for k, v in list(o.items()):
            if isinstance(v, str) and v.startswith("0x") and v != "0x0":
                o[k] = "p%d" % names.setdefault(v, len(names))
        out.append(json.dumps(o, sort_keys=True))
    return out


def expectations(stdout):
    return {e["pid"]: e for e in (json.loads(l) for l in stdout.splitlines() if l.startswith("{"))}


def case_same(build, tmp):
    col = Collector(build, os.path.join(tmp, "col"))
    progs = [("calls", []), ("threads", []), ("churn", ["10", "8"])]
    # every large release counted: the RESIDENT budget picks them by time;
    # no CPU records: they come with gaps of time, and records are compared
    every = {"ALLOCTRACE_RESIDENT_BUDGET": "100", "ALLOCTRACE_CPU_GAP_US": "0"}
    for prog, args in progs:
        r = record(build, "tcp://127.0.0.1:%d" % col.port, prog, args, ["--buffer-kb", "4"],
                   env=every)
        if r.returncode != 0:
            fail("%s over tcp: exit %d\n%s" % (prog, r.returncode, r.stderr))
        col.wait_streams(progs.index((prog, args)) + 1)
        net = info(build, re.findall(r" bytes -> (\S+\.atr) ", col.text())[-1])
        r2 = record(build, os.path.join(tmp, "loc_" + prog), prog, args, ["--buffer-kb", "4"],
                    env=every)
        if r2.returncode != 0:
            fail("%s to a file: exit %d\n%s" % (prog, r2.returncode, r2.stderr))
        loc = info(build, os.path.join(tmp, "loc_" + prog))
        a, b = stable(net[0]), stable(loc[0])
        if prog == "threads" or prog == "churn":
            # threads interleave differently from run to run: the counts
            # that do not depend on it must match
            # (and BRK records are written per flush)
            for k in ("peak_live_bytes", "live_blocks_at_end", "live_bytes_at_end", "thread_stats",
                      "records"):
                a.pop(k, None)
                b.pop(k, None)
        if a != b:
            fail("%s: info differs between tcp and file:\n tcp  %s\n file %s" %
                 (prog, json.dumps(a, sort_keys=True), json.dumps(b, sort_keys=True)))
        exp = list(expectations(r.stdout).values())[0] if prog != "churn" else net[0]
        if net[0]["calls"] != exp["calls"]:
            fail("%s: tcp trace counts %s, the program made %s" % (prog, net[0]["calls"], exp["calls"]))
        if prog == "calls":
            da = dump_norm(build, net[0]["path"])
            db = dump_norm(build, loc[0]["path"])
            if da != db:
                for i, (x, y) in enumerate(zip(da, db)):
                    if x != y:
                        fail("calls: dump differs at record %d:\n tcp  %s\n file %s" % (i, x, y))
                fail("calls: dump lengths differ: %d vs %d" % (len(da), len(db)))
    if "staging block" not in col.text() or " 0 frame(s)" in col.text().split("churn")[-1]:
        fail("expected frames and staging blocks to travel:\n" + col.text())
    col.stop()


def case_fork(build, tmp):
    col = Collector(build, os.path.join(tmp, "col"))
    r = record(build, "tcp://127.0.0.1:%d" % col.port, "forker", rec=["--buffer-kb", "4"])
    if r.returncode != 0:
        fail("forker over tcp: exit %d\n%s" % (r.returncode, r.stderr))
    exp = expectations(r.stdout)
    col.wait_streams(len(exp))
    col.stop()
    procs = {p["pid"]: p for p in info(build, os.path.join(tmp, "col"))}
    if set(procs) != set(exp):
        fail("processes: collector wrote %s, the program had %s" % (sorted(procs), sorted(exp)))
    children = 0
    for pid, e in exp.items():
        p = procs[pid]
        if p["calls"] != e["calls"]:
            fail("pid %d: trace counts %s, the process made %s" % (pid, p["calls"], e["calls"]))
        if p["lost_records"] or not p["clean_exit"]:
            fail("pid %d: lost %d, clean exit %s" % (pid, p["lost_records"], p["clean_exit"]))
        children += p["fork_child"]
    if children < 1:
        fail("no stream was marked as a fork child")


def case_exec(build, tmp):
    col = Collector(build, os.path.join(tmp, "col"))
    r = record(build, "tcp://127.0.0.1:%d" % col.port, "execer")
    if r.returncode != 0:
        fail("execer over tcp: exit %d\n%s" % (r.returncode, r.stderr))
    col.wait_streams(5)  # three images, and two continuations (sent by the next image)
    col.stop()
    files = sorted(f for f in os.listdir(os.path.join(tmp, "col")) if f.endswith(".atr"))
    pid = json.loads(r.stdout.splitlines()[0])["pid"]
    want = ["%d.1.atr" % pid, "%d.2.atr" % pid, "%d.atr" % pid]
    if files != want:
        fail("files %s, expected %s (one per image, named as a local record names them)"
             % (files, want))
    got = {p["exec_seq"]: p for p in info(build, os.path.join(tmp, "col"))}
    for line in r.stdout.splitlines():
        e = json.loads(line)
        img = e.get("image", 0)
        if got[img]["calls"] != e["calls"]:
            fail("image %d: trace counts %s, it made %s" % (img, got[img]["calls"], e["calls"]))


def case_client_killed(build, tmp):
    col = Collector(build, os.path.join(tmp, "col"))
    marks = os.path.join(tmp, "marks")
    cmd = [os.path.join(build, "alloctrace"), "record", "--buffer-kb", "4", "-o",
           "tcp://127.0.0.1:%d" % col.port, "--", os.path.join(build, "tests", "progs", "killme"),
           marks]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    pid = None
    while time.time() < deadline:
        try:
            with open(marks) as f:
                lines = f.read().split()
        except OSError:
            lines = []
        if "ITER" in lines and lines.count("ITER") >= 20:
            pid = int(lines[1])
            done = int(lines[-1])  # iterations finished (a malloc and a free each)
            break
        time.sleep(0.01)
    if pid is None:
        p.kill()
        fail("killme did not get going")
    os.kill(pid, signal.SIGKILL)
    p.wait(TIMEOUT)
    col.wait_streams(1)
    if col.p.poll() is not None:
        fail("the collector died with its client:\n" + col.text())
    # the collector still takes new streams
    r = record(build, "tcp://127.0.0.1:%d" % col.port, "calls")
    col.wait_streams(3)  # the killed one, its continuation from record, the next
    col.stop()
    q = {x["pid"]: x for x in info(build, os.path.join(tmp, "col"))}
    k = q[pid]
    if k["clean_exit"]:
        fail("a SIGKILLed client's file claims a clean exit")
    # the frames it sent, then its staging blocks, which `record` sends
    # from the spool after the kill: every call it reported is there
    if k["total_calls"] < 2 * done:
        fail("%d calls of the killed client arrived, it had reported %d" %
             (k["total_calls"], 2 * done))
    if "the rest of its stream" not in col.text():
        fail("record did not send the killed client's staging blocks:\n" + col.text())
    if r.returncode != 0 or len(q) != 2:
        fail("the next client was not recorded:\n" + col.text())
    us, level = units(k["path"])
    if level != 9 or any(kind != 4 for kind, _ in us):
        fail("the killed client's file was not compacted (level %d, units %s)" % (level, us))


def case_killed(build, tmp):
    col = Collector(build, os.path.join(tmp, "col"))
    cmd = [os.path.join(build, "alloctrace"), "record", "--buffer-kb", "4", "-o",
           "tcp://127.0.0.1:%d" % col.port, "--", os.path.join(build, "tests", "progs", "churn"),
           "400", "20"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline and " -> " not in col.text():
        time.sleep(0.01)
    time.sleep(0.1)
    col.p.kill()
    col.p.wait()
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the program hung after the collector died")
    if p.returncode != 0:
        fail("exit %d after the collector died:\n%s" % (p.returncode, err))
    if "cut short" not in err:
        fail("stderr does not say the trace was cut short:\n" + err)
    if "kept in " + tmp not in err:
        fail("record does not say where the unsent end of the trace is:\n" + err)
    if not out.startswith("{"):
        fail("the program's output is missing: %r" % out[:200])
    # what arrived before the kill reads back
    files = [f for f in os.listdir(os.path.join(tmp, "col")) if f.endswith(".atr")]
    if len(files) != 1:
        fail("expected one (partial) file, got %s" % files)
    info(build, os.path.join(tmp, "col", files[0]))


def read_marks(path):
    """killme's marks file: (pid, iterations reported so far)"""
    try:
        with open(path) as f:
            w = f.read().split()
    except OSError:
        return None, 0
    if len(w) < 2:
        return None, 0
    return int(w[1]), int(w[-1]) if len(w) > 2 and w[-2] == "ITER" else 0


def wait_iter(marks, n, timeout=25):
    deadline = time.time() + timeout
    while time.time() < deadline:
        pid, it = read_marks(marks)
        if it >= n:
            return pid, it
        time.sleep(0.01)
    return read_marks(marks)


def check_exact(build, coldir, out, want_lost):
    """one file for the program; calls in it + lost records == its own count"""
    exp = expectations(out)
    if len(exp) != 1:
        fail("no expectation line from the program: %r" % out[:300])
    pid, e = list(exp.items())[0]
    files = sorted(f for f in os.listdir(coldir) if f.endswith(".atr"))
    if files != ["%d.atr" % pid]:
        fail("files %s: expected the one file %d.atr, continued" % (files, pid))
    q = info(build, coldir)[0]
    made = sum(e["calls"].values())
    if q["total_calls"] + q["lost_records"] != made:
        fail("%d calls in the file + %d lost != %d calls the program made (lost blocks %d)"
             % (q["total_calls"], q["lost_records"], made, q["lost_blocks"]))
    if want_lost and q["lost_records"] == 0:
        fail("nothing was lost, yet the buffer could not hold the outage (%d calls)" % made)
    if not want_lost and q["lost_records"] != 0:
        fail("%d calls lost though the buffer held them all" % q["lost_records"])
    if not q["clean_exit"]:
        fail("the file does not say the program exited")
    return q, made


def case_restart(build, tmp):
    for buf_kb, lossy in ((64, True), (16384, False)):
        coldir = os.path.join(tmp, "col%d" % buf_kb)
        col = Collector(build, coldir, log="collect%d.log" % buf_kb)
        marks = os.path.join(tmp, "marks%d" % buf_kb)
        cmd = [os.path.join(build, "alloctrace"), "record", "--buffer-kb", "4", "-o",
               "tcp://127.0.0.1:%d" % col.port, "--",
               os.path.join(build, "tests", "progs", "killme"), marks, "1500000"]
        env = dict(os.environ, ALLOCTRACE_NET_BUFFER_KB=str(buf_kb),
                   ALLOCTRACE_NET_TIMEOUT_MS="5000")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        _, i0 = wait_iter(marks, 100000)
        col.p.kill()
        col.p.wait()
        # as if the kill had cut a unit in the middle: the restarted
        # collector must cut it off before it goes on
        files = [f for f in os.listdir(coldir) if f.endswith(".atr")]
        with open(os.path.join(coldir, files[0]), "ab") as f:
            f.write(struct.pack("<II", 0x4b4c4254, 4) + b"\x55" * 100)
        _, i1 = wait_iter(marks, i0 + 200000)  # it goes on without a collector
        col2 = Collector(build, coldir, port=col.port, log="collect%d.2.log" % buf_kb)
        try:
            out, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("the program hung around the collector's restart")
        col2.wait_streams(1)
        col2.stop()
        if p.returncode != 0:
            fail("exit %d:\n%s" % (p.returncode, err))
        if "lost the connection to" not in err or "reconnected to" not in err:
            fail("stderr does not tell of the outage and the reconnect:\n" + err)
        if "reconnected, the stream goes on" not in col2.text():
            fail("the restarted collector did not continue the file:\n" + col2.text())
        q, made = check_exact(build, coldir, out, lossy)
        print("restart, %d KiB buffer: collector down for %d iterations; %d calls made, "
              "%d in the file, %d lost, %d blocks missing" %
              (buf_kb, i1 - i0, made, q["total_calls"], q["lost_records"], q["lost_blocks"]))


class AckEater:
    """A TCP proxy to the collector that swallows the collector's
    acknowledgements on the first connection and cuts it after `cut`
    seconds: the collector has written everything, the sender has had
    nothing confirmed and sends it all again on its next connection
    (which this proxy passes through untouched)."""

    def __init__(self, port, cut):
        import threading
        self.threading = threading
        self.port, self.cut, self.conns = port, cut, 0
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4)
        self.my_port = self.ls.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def pipe(self, a, b, swallow=False):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if not swallow:
                    b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @staticmethod
    def cut_both(*socks):
        for x in socks:
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:  # the sender may have gone already
                pass

    def serve(self):
        while True:
            c, _ = self.ls.accept()
            u = socket.create_connection(("127.0.0.1", self.port))
            first = self.conns == 0
            self.conns += 1
            self.threading.Thread(target=self.pipe, args=(c, u), daemon=True).start()
            self.threading.Thread(target=self.pipe, args=(u, c, first), daemon=True).start()
            if first:
                t = self.threading.Timer(self.cut, self.cut_both, args=(c, u))
                t.daemon = True
                t.start()


def case_resend(build, tmp):
    """No acknowledgement reaches the sender before its connection is cut:
    it sends everything again on the next one, and the collector, which
    had written it all, skips every frame it has: nothing twice, nothing
    lost."""
    coldir = os.path.join(tmp, "col")
    col = Collector(build, coldir)
    proxy = AckEater(col.port, 0.4)
    marks = os.path.join(tmp, "marks")
    cmd = [os.path.join(build, "alloctrace"), "record", "--buffer-kb", "4", "-o",
           "tcp://127.0.0.1:%d" % proxy.my_port, "--",
           os.path.join(build, "tests", "progs", "killme"), marks, "800000"]
    env = dict(os.environ, ALLOCTRACE_NET_BUFFER_KB="32768", ALLOCTRACE_NET_TIMEOUT_MS="5000")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    if r.returncode != 0:
        fail("exit %d:\n%s" % (r.returncode, r.stderr))
    col.wait_streams(2)
    col.stop()
    if proxy.conns < 2 or "reconnected to" not in r.stderr:
        fail("the sender did not reconnect (%d connections):\n%s" % (proxy.conns, r.stderr))
    m = re.search(r"(\d+) frame\(s\) it had already", col.text())
    if not m or int(m.group(1)) == 0:
        fail("no frame was sent twice and skipped:\n" + col.text())
    q, made = check_exact(build, coldir, r.stdout, False)
    print("resend: %d calls made, %d in the file, %s frames skipped as already written"
          % (made, q["total_calls"], m.group(1)))


def case_slow(build, tmp):
    """While the collector is stopped the program keeps going (millions of
    calls, far more than the 64 KiB buffer and the kernel's socket buffers
    hold); once the collector is back, the later blocks say what was
    dropped."""
    coldir = os.path.join(tmp, "col")
    col = Collector(build, coldir)
    marks = os.path.join(tmp, "marks")
    cmd = [os.path.join(build, "alloctrace"), "record", "--buffer-kb", "4", "-o",
           "tcp://127.0.0.1:%d" % col.port, "--", os.path.join(build, "tests", "progs", "killme"),
           marks, "2600000"]
    env = dict(os.environ, ALLOCTRACE_NET_BUFFER_KB="64", ALLOCTRACE_NET_TIMEOUT_MS="200")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    pid, i0 = wait_iter(marks, 5000)
    col.p.send_signal(signal.SIGSTOP)
    t0 = time.time()
    _, i1 = wait_iter(marks, i0 + 2000000)
    stopped = time.time() - t0
    col.p.send_signal(signal.SIGCONT)
    if i1 < i0 + 2000000:
        p.kill()
        fail("the program made only %d iterations in %.1f s while the collector was stopped "
             "(blocked?)" % (i1 - i0, stopped))
    out, err = p.communicate(timeout=TIMEOUT)
    if p.returncode != 0:
        fail("exit %d:\n%s" % (p.returncode, err))
    col.wait_streams(1)
    col.stop()
    q, made = check_exact(build, coldir, out, True)
    print("slow: %d iterations (%d calls) in %.2f s with the collector stopped; of %d calls "
          "%d arrived, %d counted lost, %d blocks missing" %
          (i1 - i0, 2 * (i1 - i0), stopped, made, q["total_calls"], q["lost_records"],
           q["lost_blocks"]))


def send_raw(port, data, close_early=False):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(data)
    except OSError:
        pass
    s.close()


def hello(version=1, trace_hdr=4096, pid=4242):
    h = b"ALCTSTRM" + struct.pack("<IIQII", version, 64, 0, trace_hdr, 0) + b"testhost".ljust(32, b"\0")
    t = bytearray(4096)
    t[0:8] = b"ALCTRACE"
    struct.pack_into("<IIQIII", t, 8, 2, 4096, 4, 4096, 0, pid)
    return h + bytes(t)


def case_bad_input(build, tmp):
    col = Collector(build, os.path.join(tmp, "col"))
    bad = [
        (b"GET / HTTP/1.0\r\n\r\n" + b"x" * 100, "bad magic"),
        (hello(version=9), "stream version 9"),
        (hello(trace_hdr=12), "trace header of 12 bytes"),
        (hello() + struct.pack("<II", 7, 0), "unknown message type 7"),
        (hello() + struct.pack("<II", 1, 1 << 30), "unit message of"),
        (hello(pid=4243) + struct.pack("<II", 1, 64) + b"TBLK" + bytes(60), "pid 0 in a stream of pid 4243"),
        (hello(pid=4245) + struct.pack("<II", 1, 64) + b"XBLK" + bytes(60), "unit 0: bad magic"),
        (hello(pid=4244) + struct.pack("<II", 1, 200) + bytes(30), "closed inside a message"),
        (hello()[:100], "before a whole hello"),
    ]
    for data, want in bad:
        send_raw(col.port, data)
        deadline = time.time() + 10
        while time.time() < deadline and want not in col.text():
            time.sleep(0.02)
        if want not in col.text():
            fail("no %r in the collector's messages:\n%s" % (want, col.text()))
        if col.p.poll() is not None:
            fail("the collector died on bad input:\n" + col.text())
    r = record(build, "tcp://127.0.0.1:%d" % col.port, "calls")
    if r.returncode != 0:
        fail("a good stream after bad ones: exit %d\n%s" % (r.returncode, r.stderr))
    pid = list(expectations(r.stdout))[0]
    deadline = time.time() + 10
    while time.time() < deadline and "pid %d: " % pid not in col.text():
        time.sleep(0.05)
    col.stop()
    p = info(build, os.path.join(tmp, "col", "%d.atr" % pid))[0]
    if p["calls"] != expectations(r.stdout)[pid]["calls"]:
        fail("the good stream lost calls after bad ones")


def case_no_collector(build, tmp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = record(build, "tcp://127.0.0.1:%d" % port, "calls")
    if r.returncode != 0:
        fail("exit %d without a collector:\n%s" % (r.returncode, r.stderr))
    if "cannot send the trace to tcp://127.0.0.1:%d" % port not in r.stderr:
        fail("stderr does not say why nothing was traced:\n" + r.stderr)


def units(path):
    """(kind, used) of each unit of a v2 file, and its compact_level."""
    with open(path, "rb") as f:
        b = f.read()
    hs, bs = struct.unpack_from("<I", b, 12)[0], struct.unpack_from("<I", b, 24)[0]
    level = struct.unpack_from("<I", b, 252)[0]
    off, out = hs, []
    while off + 64 <= len(b):
        if struct.unpack_from("<Q", b, off)[0] == 0:
            off += 8
            continue
        magic, kind = struct.unpack_from("<II", b, off)
        if magic != 0x4b4c4254:
            fail("%s: bad unit at 0x%x" % (path, off))
        used, csize = struct.unpack_from("<I", b, off + 24)[0], struct.unpack_from("<I", b, off + 36)[0]
        out.append((kind, used))
        off += 64 + ((csize + 7) & ~7) if kind == 4 else bs
    return out, level


def case_compacted(build, tmp):
    for level, extra in ((9, []), (0, ["--compact-level", "0"])):
        coldir = os.path.join(tmp, "col%d" % level)
        col = Collector(build, coldir, extra=extra + ["--streams", "1"])
        r = record(build, "tcp://127.0.0.1:%d" % col.port, "threads", [], ["--buffer-kb", "4"])
        if r.returncode != 0:
            fail("threads over tcp: exit %d\n%s" % (r.returncode, r.stderr))
        if col.p.wait(TIMEOUT) != 0:  # --streams 1: gone once its compactor is done
            fail("collector exit %s:\n%s" % (col.p.returncode, col.text()))
        path = re.findall(r" bytes -> (\S+\.atr) ", col.text())[-1]
        m = re.search(r"(\d+) frame\(s\), (\d+) staging block", col.text())
        sent = int(m.group(1)) + int(m.group(2))
        us, got_level = units(path)
        if got_level != level or any(k != 4 for k, _ in us):
            fail("level %d: file not compacted (level %d, units %s)" % (level, got_level, us))
        if level and not (len(us) < sent / 4 and max(u for _, u in us) > 4096):
            fail("level %d: %d units for %d sent, largest %d bytes: frames not merged" %
                 (level, len(us), sent, max(u for _, u in us)))
        exp = list(expectations(r.stdout).values())[0]
        net = info(build, path)[0]
        if net["calls"] != exp["calls"] or net["lost_records"]:
            fail("level %d: the file counts %s calls (lost %s), the program made %s" %
                 (level, net["calls"], net["lost_records"], exp["calls"]))


CASES = {"compacted": case_compacted, "same": case_same, "fork": case_fork, "exec": case_exec, "killed": case_killed,
         "restart": case_restart, "resend": case_resend, "client_killed": case_client_killed,
         "slow": case_slow, "bad_input": case_bad_input, "no_collector": case_no_collector}


def run_case(fn, c):
    os.environ["TMPDIR"] = c.tmp  # record's spool directories go there
    fn(c.build, c.tmp)


if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=run_case, tmp_prefix="atr-net-"))
