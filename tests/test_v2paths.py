#!/usr/bin/env python3
"""test_v2paths.py - the reader decodes v2 frames record by record straight
into events; with atr_set_v2_words() it decodes each frame whole into
version-1 words first (the earlier path).  On traces recorded here the two
give the same events, field for field; and the narrow path
(atr_iter_next_calls: compact call records, a thread's run at a time) gives
the events of atr_iter_next_ref and the same walk statistics
(tests/v2paths.c), also with frames decompressed by a helper
(atr_iter_help), between batches and on a thread of its own.

  threads   8 threads, small blocks (many frames per thread)
  timing    --timing --stacks, calls of every type (tests/progs/calls)
  cxx       C++ with --stacks
  sampled   --sample 4096 (weights carried from record to record)
  xcalls    the mmap family, brk/sbrk, mallopt & co. (EXT records), --timing
  churn     many short-lived threads, small blocks
  turns     two threads taking turns, small blocks kept as frames
            (--compact-level 0): ~200 frames each, which a helper
            decompresses

usage: test_v2paths.py [--build DIR] CASE...   (or --list; tests/atr_runner.py)
"""
import os
import re
import subprocess
import sys

import atr_runner
from atr_runner import fail

BUF4 = ["--buffer-kb", "4"]


def check(c, prog, args, rec_args, many_frames=False):
    d = os.path.join(c.tmp, "t")
    c.run(["record", "-o", d] + rec_args + ["--", c.prog(prog)] + args)
    r = subprocess.run([os.path.join(c.build, "v2paths"), d], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        fail("v2paths: %s%s" % (r.stdout, r.stderr))
    m = re.search(r"^(\d+) events in (\d+) traces agree$", r.stdout, re.M)
    if not m or int(m.group(1)) == 0:
        fail("v2paths compared nothing:\n" + r.stdout)
    blocks = sum(int(b) for b in re.findall(r", (\d+) blocks, ", r.stdout, re.M))
    if blocks == 0:
        fail("no v2 frames in the traces:\n" + r.stdout)
    inline = sum(int(h) for h in re.findall(r" helped (\d+) inline", r.stdout))
    if many_frames and inline == 0:
        fail("the helper decompressed no frame between batches:\n" + r.stdout)


CASES = {
    "threads": lambda c: check(c, "threads", ["8"], BUF4),
    "timing": lambda c: check(c, "calls", [], ["--timing", "--stacks"] + BUF4),
    "cxx": lambda c: check(c, "cxx", [], ["--stacks", "--stack-depth", "8"] + BUF4),
    "sampled": lambda c: check(c, "churn", ["20", "6"], ["--sample", "4096"] + BUF4),
    "xcalls": lambda c: check(c, "xcalls", [], ["--timing"] + BUF4),
    "churn": lambda c: check(c, "churn", ["20", "6"], BUF4),
    "turns": lambda c: check(c, "turns", ["10", "2000"], BUF4 + ["--compact-level", "0"],
                             many_frames=True),
}

if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, tmp_prefix="atr-v2paths-"))
