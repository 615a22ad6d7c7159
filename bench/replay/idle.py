#!/usr/bin/env python3
"""Where the cores went while a command ran: its threads, idle, other tasks.

    bench/replay/idle.py [--comm PREFIX] -- CMD [ARGS...]

Runs CMD under `perf record -e sched:sched_switch -a` (the sched tracepoints
must be readable: root, or perf_event_paranoid <= -1), then splits the CPU
time of every core between the first and the last context switch of a task
whose name starts with PREFIX (default: the command's own name, 15
characters as the kernel keeps them) into: those tasks, idle (swapper),
niced tasks (nice > 0: e.g. helpers' builds) and the rest.  Then the idle
time that followed a PREFIX task going to sleep, counted by its state.

A replay that leaves cores idle while its threads outnumber them is
waiting on itself (bench/replay/RESULTS.md, "Idle cores in the 200-thread
replay").  Wall times on a shared machine are only comparable when
`niced` is near 0.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

SW = re.compile(
    r"\s*\[(\d+)\]\s+([\d.]+):.*prev_comm=(.*?) prev_pid=(\d+) prev_prio=(\d+) "
    r"prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+) next_prio=(\d+)"
)


def main(argv):
    comm = None
    if argv[:1] == ["--comm"]:
        comm, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    comm = comm or os.path.basename(argv[0])[:15]
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        rc = subprocess.run(
            ["perf", "record", "-q", "-e", "sched:sched_switch", "-a", "-o", data, "--"] + argv
        ).returncode
        if rc != 0:
            print("idle.py: the command (or perf) failed: %d" % rc, file=sys.stderr)
            return 1
        out = subprocess.run(
            ["perf", "script", "-i", data, "-F", "cpu,time,trace"],
            capture_output=True,
            text=True,
        ).stdout
    ev = []
    for line in out.splitlines():
        m = SW.match(line)
        if m:
            ev.append((int(m[1]), float(m[2]), m[3], m[6], m[7], int(m[9])))
    mine = [e for e in ev if e[2].startswith(comm) or e[4].startswith(comm)]
    if not mine:
        print("idle.py: no context switch of a task named %s*" % comm, file=sys.stderr)
        return 1
    t0, t1 = mine[0][1], mine[-1][1]
    cur, last = {}, {}
    acc = collections.Counter()
    slept = collections.Counter()
    pend = {}
    for cpu, t, pcomm, pstate, ncomm, nprio in ev:
        if cpu in cur and t0 <= t <= t1:
            name, prio = cur[cpu]
            if name.startswith("swapper"):
                key = "idle"
            elif name.startswith(comm):
                key = comm
            elif prio > 120:
                key = "niced"
            else:
                key = "other"
            acc[key] += t - max(last[cpu], t0)
        if cpu in pend:
            state, ts = pend.pop(cpu)
            if t0 <= ts <= t1:
                slept[state] += t - ts
        if ncomm.startswith("swapper") and pcomm.startswith(comm):
            pend[cpu] = (pstate, t)
        cur[cpu] = (ncomm, nprio)
        last[cpu] = t
    total = sum(acc.values())
    print("window %.3f s, %d cores seen, %.3f core-s" % (t1 - t0, len(cur), total))
    for k in (comm, "idle", "niced", "other"):
        print("  %-16s %8.3f s %5.1f%%" % (k, acc[k], 100 * acc[k] / total if total else 0))
    for state, v in slept.most_common():
        print("  idle after a %s task went to state %s: %.3f s" % (comm, state, v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
