"""atr_runner.py - what every test runner shares, so that a runner holds
only its cases (docs/CONTRIBUTING.md, "How to add a test").

A runner is a script with a docstring, a dict of cases and one line:

    CASES = {"thread": case_thread, "window": case_window}

    if __name__ == "__main__":
        sys.exit(atr_runner.main(CASES, __doc__))

and its command line is the same for all:

    RUNNER --list                  the case names, one a line: CMake adds one
                                   test per name (cmake/atr_cases.cmake)
    RUNNER [--build DIR] [--keep] CASE...   (none, or "all": every case)

Each case gets a fresh temporary directory and is called as fn(c), c a
Case: c.build (the build directory, absolute), c.tmp, c.name, c.args (the
parsed options; a runner adds its own with options=), c.alloctrace,
c.lib, c.prog(), c.run(); sanitized(build) says whether the build is ASan's.  call= adapts cases that take other arguments:
call=lambda fn, c: fn(c.build, c.tmp).

A case fails with fail(msg) (or a Failure), skips with skip(msg) (exit
status 77, ctest's SKIP_RETURN_CODE where the runner sets it), and may
return a line that says what it checked.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


class Failure(Exception):
    """A case that failed: the message says what and why."""


class Skipped(Exception):
    """A case that cannot run here (a missing server or package)."""


def fail(msg):
    raise Failure(msg)


def skip(msg):
    raise Skipped(msg)


class Case:
    """What a case works with."""

    def __init__(self, name, build, tmp, args):
        self.name, self.build, self.tmp, self.args = name, build, tmp, args
        self.alloctrace = os.path.join(build, "alloctrace")
        self.lib = os.path.join(build, "liballoctrace.so")

    def prog(self, name, sub="progs"):
        """A test program of the build: BUILD/tests/<sub>/<name>."""
        return os.path.join(self.build, "tests", sub, name)

    def run(self, args, ok=True, timeout=120, **kw):
        """`alloctrace ARGS...`, output captured as text; with ok, a
        non-zero exit status fails the case."""
        r = subprocess.run([self.alloctrace] + list(args), capture_output=True, text=True,
                           timeout=timeout, **kw)
        if ok and r.returncode != 0:
            fail("alloctrace %s: exit %d\n%s" % (" ".join(args), r.returncode, r.stderr))
        return r


def sanitized(build):
    """Is this an ASan+UBSan build (-DALLOCTRACE_SANITIZE=ON)?"""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return "ALLOCTRACE_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


def main(cases, doc=None, call=None, options=None, tmp_prefix="atr-test-"):
    """Parse the command line, run the cases it names; the exit status:
    0 all passed, 1 any failed, 2 usage, 77 all skipped."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"),
                    help="the build directory (default: build/ of this tree)")
    ap.add_argument("--list", action="store_true",
                    help="print the case names (CMake adds one test each)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    if options:
        options(ap)
    ap.add_argument("cases", nargs="*", metavar="CASE", help="the cases (default: all)")
    a = ap.parse_args()
    if a.list:
        print("\n".join(cases))
        return 0
    names = list(cases) if not a.cases or a.cases == ["all"] else a.cases
    for n in names:
        if n not in cases:
            ap.error("unknown case %r (known: %s)" % (n, ", ".join(cases)))
    a.build = os.path.abspath(a.build)
    passed = failed = skipped = 0
    for n in names:
        t0 = time.monotonic()
        tmp = tempfile.mkdtemp(prefix=tmp_prefix + n + ".")
        c = Case(n, a.build, tmp, a)
        try:
            what = call(cases[n], c) if call else cases[n](c)
        except Failure as e:
            failed += 1
            print("FAIL %s (%.2fs)\n%s" % (n, time.monotonic() - t0, e))
        except Skipped as e:
            skipped += 1
            print("skip %s: %s" % (n, e))
        else:
            passed += 1
            print("ok   %s (%.2fs)%s" % (n, time.monotonic() - t0,
                                        ": %s" % what if isinstance(what, str) else ""))
        finally:
            if a.keep:
                print("kept %s" % tmp)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
        sys.stdout.flush()
    if len(names) > 1:
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if failed:
        return 1
    return SKIP if skipped and not passed else 0
