#!/usr/bin/env python3
"""test_clickhouse.py - `alloctrace load` and `compare --clickhouse` against
real clickhouse-servers started on loopback (tests/clickhouse/chserver.py).

cases:
  queries     three deterministic traces (call stacks, threads + fork, every
              call type and edge case) loaded; every query of
              docs/CLICKHOUSE.md answers exactly what `report --json` says;
              the same for a --events none load
  idempotent  a second load adds nothing; --replace leaves one copy
  failures    a bad URL, a schema from an older version, a server killed
              mid-load: clear errors, nothing counted as complete, and a
              later load completes
  cluster     two servers, Distributed tables over both: the queries span
              the shards and still equal `report --json` of every trace
  compare     `compare --clickhouse`: every run stored, the allocator
              query equals `compare --json`

Skipped (exit 77) only when clickhouse-server is not installed.
usage: test_clickhouse.py [--build DIR] CASE...  (or --list; tests/atr_runner.py)
"""

import json
import math
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import atr_runner  # noqa: E402
import chserver  # noqa: E402
from atr_runner import fail, skip  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DB = "alloctrace"


def check(cond, msg):
    if not cond:
        fail(msg)


class Ctx(atr_runner.Case):
    def __init__(self, c):
        super().__init__(c.name, c.build, c.tmp, c.args)
        self.at = self.alloctrace

    def run(self, args, ok=True, env=None, timeout=300):
        return super().run(args, ok=ok, timeout=timeout, env=env)

    def record(self, name, argv, extra=()):
        out = os.path.join(self.tmp, name)
        self.run(["record", "-o", out, "--stacks", "--timing"] + list(extra) + ["--"] + argv)
        return out

    def report(self, trace):
        r = self.run(["report", "--json", "--top", "0", trace])
        return json.loads(r.stdout)["processes"]

    def load(self, url, trace, *args, ok=True, env=None):
        return self.run(["load", trace, "--clickhouse", url] + list(args), ok=ok, env=env)


def traces(ctx):
    """Deterministic programs recorded with stacks and timing."""
    stk = os.path.join(ctx.build, "tests", "stacks")
    progs = os.path.join(ctx.build, "tests", "progs")
    return {
        "stacks": ctx.record("stacks", [os.path.join(stk, "stk_prog"),
                                        os.path.join(stk, "stk_module.so")]),
        "threads": ctx.record("threads", [os.path.join(progs, "threads"), "3", "fork"]),
        "calls": ctx.record("calls", [os.path.join(progs, "calls"), "100"]),
    }


def doc_queries():
    with open(os.path.join(SRC, "docs", "CLICKHOUSE.md")) as f:
        text = f.read()
    q = dict(re.findall(r"<!-- query: (\w+) -->.*?```sql\n(.*?)```", text, re.S))
    for name in ("hot_by_calls", "hot_by_bytes", "leaks", "peak", "threads", "stack_stats",
                 "allocators", "leaks_everywhere", "slower"):
        check(name in q, "docs/CLICKHOUSE.md has no query %s" % name)
    return q


def on_cluster(sql):
    """docs/CLICKHOUSE.md, "A cluster": every table read through its _all."""
    return re.sub(r"\balloctrace\.([a-z_]+)", r"alloctrace.\1_all", sql)


def trace_id(load_stdout):
    m = re.search(r"trace (\d+)", load_stdout)
    check(m, "no trace id in %r" % load_stdout)
    return m.group(1)


def processes(srv, tid, suffix=""):
    """proc -> path of the trace's processes (through complete_loads)."""
    rows = srv.rows("SELECT proc, path FROM alloctrace.processes%s WHERE (trace_id, load_id) IN "
                    "(SELECT trace_id, load_id FROM alloctrace.complete_loads%s) AND trace_id = %s"
                    % (suffix, suffix, tid), distributed_product_mode="global")
    return {r[0]: r[1] for r in rows}


def by_proc(rows, tid):
    """Rows (trace_id, proc, ...) of one trace grouped by proc, order kept."""
    out = {}
    for r in rows:
        if r[0] == tid:
            out.setdefault(r[1], []).append(r[2:])
    return out


def frame_name(fr):
    if fr["function"]:
        return fr["function"]
    if fr["module"]:
        return "%s+%s" % (os.path.basename(fr["module"]), fr["offset"])
    return fr["address"]


def all_stacks(p):
    """Every stack object of a report process by id."""
    st = {}
    for lst in (p["top_by_calls"], p["top_by_bytes"], p["leaks"]["stacks"], p["peak"]["stacks"],
                p["temporary"]["stacks"]):
        for s in lst:
            st[s["stack_id"]] = s
    return st


def check_trace(srv, q, tid, reps, suffix="", events=True):
    """Every query's answer for trace tid equals report --json (reps)."""
    s = dict(distributed_product_mode="global")
    conv = on_cluster if suffix else (lambda x: x)
    procs = processes(srv, tid, suffix)
    check(len(procs) == len(reps), "trace %s: %d processes loaded, report has %d"
          % (tid, len(procs), len(reps)))
    rep_by_path = {p["path"]: p for p in reps}
    if events:
        hot = by_proc(srv.rows(conv(q["hot_by_calls"]), **s), tid)
        hotb = by_proc(srv.rows(conv(q["hot_by_bytes"]), **s), tid)
        leaks = by_proc(srv.rows(conv(q["leaks"]), **s), tid)
        peak = by_proc(srv.rows(conv(q["peak"]), **s), tid)
        thr = by_proc(srv.rows(conv(q["threads"]), **s), tid)
    sst = by_proc(srv.rows(conv(q["stack_stats"]), **s), tid)
    for proc, path in procs.items():
        p = rep_by_path.get(path)
        check(p is not None, "loaded process %s not in report" % path)
        what = "trace %s %s" % (tid, os.path.basename(path))
        if events:
            want = [[str(x["stack_id"]), str(x["calls"]), str(x["bytes"])] for x in p["top_by_calls"]]
            got = [r[:3] for r in hot.get(proc, [])]
            check(got == want, "%s hot_by_calls:\n sql    %s\n report %s" % (what, got, want))
            for r, x in zip(hot.get(proc, []), p["top_by_calls"]):
                names = json.loads(r[3].replace("'", '"')) if r[3] != "[]" else []
                want_names = [frame_name(f) for f in x["frames"]]
                check(names == want_names, "%s stack %s frames:\n sql    %s\n report %s"
                      % (what, r[0], names, want_names))
            want = [[str(x["stack_id"]), str(x["calls"]), str(x["bytes"])] for x in p["top_by_bytes"]]
            check(hotb.get(proc, []) == want, "%s hot_by_bytes:\n sql    %s\n report %s"
                  % (what, hotb.get(proc), want))
            want = [[str(x["stack_id"]), str(x["leaked_bytes"]), str(x["leaked_blocks"])]
                    for x in p["leaks"]["stacks"]]
            check(leaks.get(proc, []) == want, "%s leaks:\n sql    %s\n report %s"
                  % (what, leaks.get(proc), want))
            want = [[str(x["stack_id"]), str(x["peak_bytes"])] for x in p["peak"]["stacks"]]
            check(peak.get(proc, []) == want, "%s peak:\n sql    %s\n report %s"
                  % (what, peak.get(proc), want))
            got = {r[0]: r for r in thr.get(proc, [])}
            for t in p["thread_stats"]:
                r = got.pop(str(t["serial"]), None)
                if r is None:
                    check(t["calls"] == 0 and t["run_ns"] == 0, "%s thread %d missing"
                          % (what, t["serial"]))
                    continue
                check([r[1], r[2], r[3], r[4], r[5]] ==
                      [str(t["tid"]), str(t["calls"]), str(t["bytes"]), str(t["run_ns"]),
                       str(t["alloc_ns"] if t["alloc_ns"] is not None else 0)],
                      "%s thread %d:\n sql    %s\n report %s" % (what, t["serial"], r, t))
                if t["alloc_share"] is not None:
                    check(float(r[6]) == t["alloc_share"], "%s thread %d alloc_share %s != %s"
                          % (what, t["serial"], r[6], t["alloc_share"]))
            check(not got, "%s: threads %s not in report" % (what, list(got)))
            check(sum(t["calls"] for t in p["thread_stats"]) == p["total_calls"],
                  "%s: thread calls do not add up" % what)
        # per-stack numbers (computed by the server from events, or by
        # alloctrace with --events none)
        want = {}
        for sid, x in all_stacks(p).items():
            want[str(sid)] = [str(x[k]) for k in ("calls", "bytes", "peak_bytes", "leaked_bytes",
                                                  "leaked_blocks", "temporary")]
        got = {r[0]: r[1:] for r in sst.get(proc, []) if any(v != "0" for v in r[1:])}
        check(got == want, "%s stack_stats:\n sql    %s\n report %s" % (what, got, want))
        row = srv.rows("SELECT peak_live_bytes, leaked_bytes, leaked_blocks, calls, duration_ns "
                       "FROM alloctrace.processes%s WHERE (trace_id, load_id) IN (SELECT trace_id, "
                       "load_id FROM alloctrace.complete_loads%s) AND trace_id = %s AND proc = %s"
                       % (suffix, suffix, tid, proc), **s)
        check(row == [[str(p["peak"]["bytes"]), str(p["leaks"]["bytes"]),
                       str(p["leaks"]["blocks"]), str(p["total_calls"]), str(p["duration_ns"])]],
              "%s processes row %s" % (what, row))


def visible_counts(srv, tables=("events", "stacks", "frames", "modules", "processes", "threads",
                                "stack_stats", "thread_stats", "rss")):
    out = {}
    for t in tables:
        out[t] = srv.rows("SELECT count() FROM alloctrace.%s WHERE (trace_id, load_id) IN "
                          "(SELECT trace_id, load_id FROM alloctrace.complete_loads)" % t)[0][0]
    return out


def raw_counts(srv):
    return {t: srv.rows("SELECT count() FROM alloctrace.%s" % t)[0][0]
            for t in ("events", "stacks", "frames", "processes", "stack_stats", "loads")}


def wait_mutations(srv, timeout=60):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if srv.rows("SELECT count() FROM system.mutations WHERE is_done = 0")[0][0] == "0":
            return
        time.sleep(0.1)
    fail("mutations not done after %d s" % timeout)


def case_queries(ctx):
    q = doc_queries()
    tr = traces(ctx)
    with chserver.Server("queries") as srv:
        print("clickhouse-server answered %.2f s after start" % srv.start_seconds)
        ids = {}
        for name, path in tr.items():
            r = ctx.load(srv.url, path)
            ids[name] = trace_id(r.stdout)
        for name, path in tr.items():
            check_trace(srv, q, ids[name], ctx.report(path))
        # the cross-trace and release queries run (their answers are not report's)
        srv.rows(q["leaks_everywhere"])
        srv.rows(q["slower"])
        # --events none: only the aggregates, by alloctrace's own pass
        for name, path in tr.items():
            ctx.load(srv.url, path, "--events", "none", "--database", "agg")
        qa = {k: v.replace("alloctrace.", "agg.") for k, v in q.items()}
        for name, path in tr.items():
            check_trace_agg(srv, qa, ids[name], ctx.report(path))
        check(srv.rows("SELECT count() FROM agg.events")[0][0] == "0",
              "--events none loaded events")
    print("ok: hot stacks, leaks, peak, threads, stack_stats equal report --json for %s"
          % ", ".join(tr))


def check_trace_agg(srv, qa, tid, reps):
    """check_trace for a --events none load (database agg)."""
    q2 = {k: v.replace("agg.", "alloctrace.") for k, v in qa.items()}
    # check_trace reads alloctrace.*: point it at agg through a substitution
    real_rows = srv.rows

    def rows(sql, **s):
        return real_rows(sql.replace("alloctrace.", "agg."), **s)
    srv.rows = rows
    try:
        check_trace(srv, q2, tid, reps, events=False)
    finally:
        srv.rows = real_rows


def case_idempotent(ctx):
    stk = os.path.join(ctx.build, "tests", "stacks")
    path = ctx.record("stacks", [os.path.join(stk, "stk_prog"), os.path.join(stk, "stk_module.so")])
    with chserver.Server("idem") as srv:
        r1 = ctx.load(srv.url, path, "--label", "version=1")
        before, raw = visible_counts(srv), raw_counts(srv)
        check(int(before["events"]) > 2000, "events not loaded: %s" % before)
        r2 = ctx.load(srv.url, path)
        check("loaded already" in r2.stdout, "second load did not notice: %r" % r2.stdout)
        check(raw_counts(srv) == raw, "second load added rows: %s -> %s" % (raw, raw_counts(srv)))
        ctx.load(srv.url, path, "--replace")
        check(visible_counts(srv) == before, "after --replace: %s != %s"
              % (visible_counts(srv), before))
        wait_mutations(srv)
        after = raw_counts(srv)
        check(after == raw, "after --replace and the clean-up: %s != %s" % (after, raw))
        check(trace_id(r1.stdout) == trace_id(ctx.load(srv.url, path).stdout), "trace id changed")
    print("ok: loading twice adds nothing; --replace keeps one copy")


def case_failures(ctx):
    stk = os.path.join(ctx.build, "tests", "stacks")
    small = ctx.record("stacks", [os.path.join(stk, "stk_prog"), os.path.join(stk, "stk_module.so")])
    # bad URLs: nothing listens, not a URL
    port = chserver.free_port()
    r = ctx.load("http://127.0.0.1:%d" % port, small, ok=False)
    check(r.returncode == 1 and "Couldn't connect" in r.stderr and "127.0.0.1:%d" % port in r.stderr,
          "no-server: exit %d, %r" % (r.returncode, r.stderr))
    r = ctx.load("127.0.0.1:8123", small, ok=False)
    check(r.returncode == 2 and "expected http://" in r.stderr, "not a URL: %r" % r.stderr)
    with chserver.Server("fail") as srv:
        # an older schema: version 0, an events table without columns of ours
        srv.query("CREATE DATABASE old")
        srv.query("CREATE TABLE old.alloctrace_schema (version UInt32, created DateTime) "
                  "ENGINE = TinyLog")
        srv.query("INSERT INTO old.alloctrace_schema VALUES (0, now())")
        srv.query("CREATE TABLE old.events (trace_id UInt64, seq UInt64) ENGINE = MergeTree "
                  "ORDER BY trace_id")
        r = ctx.load(srv.url, small, "--database", "old", ok=False)
        check(r.returncode == 1 and "schema version 0" in r.stderr, "old schema: %r" % r.stderr)
        check(srv.rows("SELECT count() FROM system.tables WHERE database = 'old'")[0][0] == "2",
              "tables were created in the old database")
        # tables of ours without a version, and a column of another type
        srv.query("CREATE DATABASE old2")
        srv.query("CREATE TABLE old2.events (trace_id UInt64, seq UInt64) ENGINE = MergeTree "
                  "ORDER BY trace_id")
        r = ctx.load(srv.url, small, "--database", "old2", ok=False)
        check(r.returncode == 1 and "without a schema version" in r.stderr, "old2: %r" % r.stderr)
        ctx.load(srv.url, small, "--database", "new")
        srv.query("ALTER TABLE new.events MODIFY COLUMN size UInt32")
        r = ctx.load(srv.url, small, "--database", "new", "--replace", ok=False)
        check(r.returncode == 1 and "table events has column size UInt32" in r.stderr,
              "changed column: %r" % r.stderr)

        # the server dies mid-load
        progs = os.path.join(ctx.build, "tests", "progs")
        big = ctx.record("big", [os.path.join(progs, "calls"), "20000"])
        env = dict(os.environ, ALLOCTRACE_CH_BATCH_ROWS="10000")
        p = subprocess.Popen([ctx.at, "load", big, "--clickhouse", srv.url], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            try:
                n = int(srv.rows("SELECT count() FROM alloctrace.events")[0][0])
            except RuntimeError:
                n = 0
            if n >= 20000:
                break
            check(p.poll() is None, "load ended before the server was killed; raise the trace size")
            time.sleep(0.02)
        srv.kill()
        out, err = p.communicate(timeout=120)
        check(p.returncode == 1, "load survived the server's death: %d %r" % (p.returncode, out))
        check("not loaded completely" in err and srv.url in err, "died: %r" % err)
        srv.start()
        tid = trace_id(err)
        n = srv.rows("SELECT count() FROM alloctrace.complete_loads WHERE trace_id = %s" % tid)
        check(n == [["0"]], "half-loaded trace counted as complete")
        check(srv.rows("SELECT count() FROM alloctrace.loads WHERE trace_id = %s" % tid)
              == [["1"]], "no incomplete loads row")
        check(int(srv.rows("SELECT count() FROM alloctrace.events WHERE trace_id = %s" % tid)[0][0])
              > 0, "the killed load left no rows: the test proves nothing")
        r = ctx.load(srv.url, big, env=env)
        check("loaded into" in r.stdout, "reload: %r" % r.stdout)
        rep = ctx.report(big)[0]
        got = srv.rows("SELECT sum(calls) FROM alloctrace.thread_stats WHERE (trace_id, load_id) "
                       "IN (SELECT trace_id, load_id FROM alloctrace.complete_loads) AND "
                       "trace_id = %s" % tid)
        check(got == [[str(rep["total_calls"])]], "after reload: %s calls, report %d"
              % (got, rep["total_calls"]))
        wait_mutations(srv)
        ev = srv.rows("SELECT count() FROM alloctrace.events WHERE trace_id = %s" % tid)[0][0]
        vis = visible_counts(srv, ("events",))["events"]
        check(ev == vis, "half-loaded rows not deleted after the reload: %s != %s" % (ev, vis))
    print("ok: bad URL, old schema, server killed mid-load")


def case_cluster(ctx):
    q = doc_queries()
    tr = traces(ctx)
    s1, s2 = chserver.Server("shard1"), chserver.Server("shard2")
    try:
        remote = chserver.cluster_xml("traces", [s1.tcp, s2.tcp])
        s1.remote = s2.remote = remote
        s1.start()
        s2.start()
        print("two clickhouse-servers answered %.2f s and %.2f s after start"
              % (s1.start_seconds, s2.start_seconds))
        ctx.run(["load", "--clickhouse", s2.url, "--schema-only"])
        ctx.run(["load", "--clickhouse", s1.url, "--schema-only", "--cluster", "traces"])
        # one trace on each shard for sure, one sharded by the loader
        ids = {"stacks": trace_id(ctx.load(s1.url, tr["stacks"]).stdout),
               "threads": trace_id(ctx.load(s2.url, tr["threads"]).stdout),
               "calls": trace_id(ctx.load(s1.url, tr["calls"], "--cluster", "traces").stdout)}
        shard = [s1, s2][int(ids["calls"]) % 2]
        other = s2 if shard is s1 else s1
        n = shard.rows("SELECT count() FROM alloctrace.events WHERE trace_id = %s" % ids["calls"])
        check(int(n[0][0]) > 0 and other.rows("SELECT count() FROM alloctrace.events WHERE "
                                              "trace_id = %s" % ids["calls"]) == [["0"]],
              "--cluster: trace %s not on shard %d alone" % (ids["calls"], int(ids["calls"]) % 2))
        local = [int(s.rows("SELECT count() FROM alloctrace.events")[0][0]) for s in (s1, s2)]
        total = int(s1.rows("SELECT count() FROM alloctrace.events_all")[0][0])
        check(all(local) and total == sum(local), "events_all %d != %s" % (total, local))
        for name, path in tr.items():
            check_trace(s1, q, ids[name], ctx.report(path), suffix="_all")
        s1.rows(on_cluster(q["leaks_everywhere"]), distributed_product_mode="global")
    finally:
        s1.stop()
        s2.stop()
    print("ok: two shards (%d + %d events): every query spans them and equals report --json"
          % tuple(local))


def case_compare(ctx):
    q = doc_queries()
    stk = os.path.join(ctx.build, "tests", "stacks")
    path = ctx.record("stacks", [os.path.join(stk, "stk_prog"), os.path.join(stk, "stk_module.so")])
    wl = os.path.join(ctx.tmp, "w.awl")
    ctx.run(["convert", path, "-o", wl])
    r = ctx.run(["compare", wl, "--allocators", "glibc", "--runs", "1", "--clickhouse",
                 "http://127.0.0.1:%d" % chserver.free_port()], ok=False)
    check(r.returncode == 1 and "Couldn't connect" in r.stderr, "compare, bad URL: %r" % r.stderr)
    with chserver.Server("compare") as srv:
        specs = "glibc,glibc+glibc.malloc.arena_max=1+glibc.malloc.trim_threshold=0"
        r = ctx.run(["compare", wl, "--allocators", specs, "--runs", "3", "--json",
                     "--clickhouse", srv.url])
        js = json.loads(r.stdout)
        check(srv.rows("SELECT count() FROM alloctrace.replay_runs") == [["6"]], "runs not stored")
        rows = srv.rows(q["allocators"])
        check(len(rows) == len(js["allocators"]), "allocators: %s" % rows)
        for row, a in zip(rows, js["allocators"]):
            check(row[2] == a["allocator"], "allocator %s != %s" % (row[2], a["allocator"]))
            check(row[1] == str(js["allocators"].index(a)) and row[4] == "3", "row %s" % row)
            check(row[3] != "", "no allocator version for %s" % row[2])
            got = [float(x) for x in row[5:13]]
            want = [a["wall_ms"][k] for k in ("median", "min", "max", "ratio")] + \
                [a["max_rss_mib"][k] for k in ("median", "min", "max", "ratio")]
            check(got == want, "%s:\n sql     %s\n compare %s" % (a["allocator"], got, want))
        metrics = [r[0] for r in srv.rows("SELECT name FROM system.columns WHERE database = "
                                          "'alloctrace' AND table = 'replay_runs' AND type = "
                                          "'Float64'")]
        keys = [k for k in metrics if k in js["allocators"][0]]
        check(len(keys) == 10, "metrics %s" % keys)
        cols = ", ".join("%s_%s" % (k, s) for k in keys for s in ("median", "min", "max"))
        med = srv.rows("SELECT %s FROM alloctrace.replay_medians ORDER BY column" % cols)
        for row, a in zip(med, js["allocators"]):
            want = [a[k][s] for k in keys for s in ("median", "min", "max")]
            got = [float(x) for x in row]
            check(all(g == w or (math.isnan(g) and w is None) for g, w in zip(got, want)),
                  "%s medians:\n sql     %s\n compare %s" % (a["allocator"], got, want))
        tun = srv.rows("SELECT tunables FROM alloctrace.replay_runs WHERE column = 1 LIMIT 1")
        check(tun == [["['glibc.malloc.arena_max=1','glibc.malloc.trim_threshold=0']"]],
              "tunables %s" % tun)
    print("ok: compare --clickhouse stored 6 runs; the allocator query equals compare --json")


def run_case(fn, c):
    if not chserver.server_binary():
        skip("clickhouse-server is not installed (Debian: apt-get install "
             "clickhouse-server clickhouse-client; scripts/setup-deps.sh does it)")
    os.environ["ALLOCTRACE_NO_PROGRESS"] = "1"
    fn(Ctx(c))


CASES = {"queries": case_queries, "idempotent": case_idempotent, "failures": case_failures,
         "cluster": case_cluster, "compare": case_compare}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=run_case, tmp_prefix="alloctrace-cht."))
