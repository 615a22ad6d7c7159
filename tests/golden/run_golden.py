#!/usr/bin/env python3
"""run_golden.py - golden-output tests of the CLI: fixed trace files (the
fuzz corpus's valid seeds: a synthetic one, a real 3-thread recording with
--timing, a real recording with --stacks) through info, dump, report,
flamegraph and diff, text and JSON, compared byte for byte with
tests/golden/expected/CASE.out.

usage: run_golden.py [--build DIR] [--update] CASE...  (none: all; or --list;
       tests/atr_runner.py)
Traces are copied to a temporary directory as t.atr (and u.atr) and the
commands run there with TZ=UTC, so no path or time zone leaks in.  After an
intended change of output: run with --update and review the diff.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import atr_runner  # noqa: E402
from atr_runner import fail  # noqa: E402

CORPUS = os.path.join(HERE, "..", "fuzz", "corpus")

# case: (trace for t.atr, trace for u.atr or None, alloctrace arguments)
CASES = {
    "info_synthetic": ("seed1", None, ["info", "t.atr"]),
    "info_synthetic_json": ("seed1", None, ["info", "--json", "t.atr"]),
    "dump_synthetic": ("seed1", None, ["dump", "t.atr"]),
    "info_threads_timing": ("real-mt-timing", None, ["info", "t.atr"]),
    "dump_threads_timing_json": ("real-mt-timing", None, ["dump", "--json", "t.atr"]),
    "report_threads_timing": ("real-mt-timing", None, ["report", "t.atr"]),
    "report_stacks": ("seed-stacks", None, ["report", "--top", "3", "t.atr"]),
    "report_stacks_json": ("seed-stacks", None, ["report", "--json", "--top", "3", "t.atr"]),
    "flamegraph_stacks": ("seed-stacks", None, ["flamegraph", "--by", "calls", "t.atr"]),
    "diff_traces": ("real-mt-timing", "seed1", ["diff", "--by", "calls", "t.atr", "u.atr"]),
    # "did you mean": typos of commands and long options (a far miss prints
    # the usage: tests/install/test_cli_docs.py)
    "didyoumean_command": ("seed1", None, ["recrod", "t.atr"]),
    "didyoumean_help": ("seed1", None, ["help", "flamegrph"]),
    "didyoumean_option": ("seed1", None, ["info", "--jsno", "t.atr"]),
    "didyoumean_option_arg": ("seed1", None, ["report", "--topp=3", "t.atr"]),
    "didyoumean_value": ("seed1", None, ["report", "--by", "clals", "t.atr"]),
    # grouped views and filters: real-stacks-phases is stk_phases (2 threads,
    # markers "start", "phase 2", "end") recorded --stacks from a path that no
    # longer exists, so its own frames stay raw and only the system's resolve
    "report_group_function": ("real-stacks-phases", None,
                              ["report", "--group", "function", "--top", "5", "t.atr"]),
    "report_group_caller": ("real-stacks-phases", None,
                            ["report", "--group", "caller", "--by", "bytes", "--top", "3", "t.atr"]),
    "report_group_module_json": ("real-stacks-phases", None,
                                 ["report", "--group", "module", "--json", "--top", "3", "t.atr"]),
    "report_filter_thread": ("real-stacks-phases", None,
                             ["report", "--thread", "T2", "--top", "2", "t.atr"]),
    "report_filter_window": ("real-stacks-phases", None,
                             ["report", "--from", "phase 2", "--to", "end", "--group", "function",
                              "--top", "3", "t.atr"]),
    "report_filter_no_marker": ("real-stacks-phases", None,
                                ["report", "--from", "nope", "--top", "1", "t.atr"]),
    "report_filter_seconds": ("seed1", None,
                              ["report", "--from", "0.00000002", "--to", "0.0000001", "t.atr"]),
    "report_filter_function": ("real-stacks-phases", None,
                               ["report", "--function", "^allocate_dtv$", "--top", "2", "t.atr"]),
    "report_filter_module": ("real-stacks-phases", None,
                             ["report", "--module", "ld-linux-x86-64.so.2", "--group", "module",
                              "t.atr"]),
    "report_filter_pid": ("real-stacks-phases", None,
                          ["report", "--pid", "7854", "--group", "function", "--top", "1", "t.atr"]),
    "report_filter_pid_missing": ("real-stacks-phases", None, ["report", "--pid", "1", "t.atr"]),
    "report_suppress": ("real-stacks-phases", None,
                        ["report", "--suppress", "supp", "--by", "leaked", "--top", "2", "t.atr"],
                        {"supp": "# known\nleak:_dl_allocate_tls\nphases+0x1233\n"}),
    "flamegraph_filter_thread": ("real-stacks-phases", None,
                                 ["flamegraph", "--thread", "T2", "t.atr"]),
    "diff_stacks": ("seed-stacks", "real-stacks-phases", ["diff", "t.atr", "u.atr"]),
    "diff_filter_thread_json": ("real-stacks-phases", "real-stacks-phases",
                                ["diff", "--json", "--thread", "T1", "t.atr", "u.atr"]),
    "export_folded_filters": ("real-stacks-phases", None,
                                 ["export", "--format", "folded", "--by", "calls", "--pid", "7854",
                                  "--from", "phase 2", "--names", "short", "t.atr"]),
    "export_group_function": ("real-stacks-phases", None,
                              ["export", "--format", "folded", "--group", "function", "--by",
                               "calls", "t.atr"]),
    "export_group_caller": ("real-stacks-phases", None,
                            ["export", "--format", "folded", "--group", "caller", "--by",
                             "bytes", "t.atr"]),
    "export_group_module_filtered": ("real-stacks-phases", None,
                                     ["export", "--format", "folded", "--group", "module",
                                      "--thread", "T1", "t.atr"]),
    "export_group_pprof_refused": ("real-stacks-phases", None,
                                   ["export", "--format", "pprof", "--group", "function",
                                    "t.atr"]),
    "report_names_raw_short": ("real-stacks-phases", None,
                               ["report", "--names", "raw", "--group", "function", "--top", "3",
                                "t.atr"]),
    # convert: the busiest process by default, --merge, and the filters
    # (the workload's counts in convert's summary; its speed is masked)
    "convert_busiest": ("real-stacks-phases", "real-mt-timing",
                        ["convert", ".", "-o", "w.wl"]),
    "convert_merge": ("real-stacks-phases", "real-mt-timing",
                      ["convert", "--merge", ".", "-o", "w.wl"]),
    "convert_merge_thread": ("real-stacks-phases", "real-mt-timing",
                             ["convert", "--merge", "--thread", "T2", ".", "-o", "w.wl"]),
    "convert_filter_thread": ("real-stacks-phases", None,
                              ["convert", "--thread", "T2", "t.atr", "-o", "w.wl"]),
    "convert_filter_window": ("real-stacks-phases", None,
                              ["convert", "--from", "phase 2", "--to", "end", "t.atr", "-o",
                               "w.wl"]),
    "convert_filter_seconds": ("real-stacks-phases", None,
                               ["convert", "--from", "0.002", "--to", "0.009", "t.atr", "-o",
                                "w.wl"]),
    "convert_filter_function": ("real-stacks-phases", None,
                                ["convert", "--function", "^allocate_dtv$", "t.atr", "-o",
                                 "w.wl"]),
    "convert_filter_module": ("real-stacks-phases", None,
                              ["convert", "--module", "ld-linux-x86-64.so.2", "t.atr", "-o",
                               "w.wl"]),
    "convert_filter_no_stacks": ("real-mt-timing", None,
                                 ["convert", "--function", "main", "t.atr", "-o", "w.wl"]),
    "convert_suppress_refused": ("real-stacks-phases", None,
                                 ["convert", "--suppress", "supp", "t.atr", "-o", "w.wl"],
                                 {"supp": "leak:main\n"}),
    "convert_merge_pid_refused": ("real-stacks-phases", "real-mt-timing",
                                  ["convert", "--merge", "--pid", "7854", ".", "-o", "w.wl"]),
    # a v1 trace recorded before format v2 still reads (issue 9)
    "info_v1_recorded": ("real-v1-calls", None, ["info", "t.atr"]),
    # the same events from v2 (compressed) as from v1: compare with
    # info_threads_timing / report_threads_timing
    "info_v2_threads_timing": ("v2-real-mt-timing", None, ["info", "t.atr"]),
    "report_v2_threads_timing": ("v2-real-mt-timing", None, ["report", "t.atr"]),
}


def run(c, spec):
    t, u, args = spec[:3]
    files = spec[3] if len(spec) > 3 else {}
    d = c.tmp
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    shutil.copy(os.path.join(CORPUS, t), os.path.join(d, "t.atr"))
    if u:
        shutil.copy(os.path.join(CORPUS, u), os.path.join(d, "u.atr"))
    env = dict(os.environ, TZ="UTC", ALLOCTRACE_NO_PROGRESS="1")
    r = subprocess.run([c.alloctrace] + args, cwd=d, env=env, capture_output=True, text=True,
                       timeout=60)
    err = r.stderr
    if args[0] == "convert":  # its own speed is no part of the result
        err = re.sub(r" in [0-9.]+ s \([0-9.]+ M records/s\)", " in S s (R M records/s)", err)
    return "exit %d\n--- stdout\n%s--- stderr\n%s" % (r.returncode, r.stdout, err)


def check(spec, c):
    got = run(c, spec)
    path = os.path.join(HERE, "expected", c.name + ".out")
    if c.args.update:
        with open(path, "w") as f:
            f.write(got)
        return "updated " + path
    with open(path) as f:
        want = f.read()
    if got != want:
        fail("output differs from %s\n%s" % (path, "".join(difflib.unified_diff(
            want.splitlines(True), got.splitlines(True), "expected", "got", n=2))))


if __name__ == "__main__":
    sys.exit(atr_runner.main(
        dict(sorted(CASES.items())), __doc__, call=check, tmp_prefix="atr-golden.",
        options=lambda ap: ap.add_argument("--update", action="store_true",
                                           help="write the outputs as the expected ones")))
