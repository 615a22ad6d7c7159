#!/usr/bin/env python3
"""test_deb.py - the Debian package, built and used without installing it.

usage: test_deb.py [--keep DIR]

Copies the source tree (without build directories) to a scratch directory,
runs `dpkg-buildpackage -us -uc -b` there, unpacks the .deb into a scratch
root with `dpkg -x`, and from that root only (clean environment, PATH
without the build tree): record a real program, info and report of its
trace, trace2wl/trace_run, `man -l` of every page, the completion script
loads.  Then lintian: errors fail the test, every other tag is printed.
The package version must be the CMake project version.
"""
import argparse
import glob
import os
import re
import shutil
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from inst_common import check, clean_env, errors, run


def skip_top(dirpath, names):
    """Build directories, VCS data and earlier package builds stay behind."""
    if os.path.abspath(dirpath) != SRC:
        return [n for n in names if n in ("__pycache__",)]
    return [n for n in names if n.startswith("build") or n.startswith("obj-") or n == ".git"
            or os.path.exists(os.path.join(dirpath, n, "CMakeCache.txt"))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="work in this directory and keep it")
    a = ap.parse_args()
    for tool in ("dpkg-buildpackage", "dh", "lintian", "fakeroot"):
        if not shutil.which(tool):
            print("FAIL: %s not found: run scripts/setup-deps.sh" % tool)
            return 1
    work = a.keep or tempfile.mkdtemp(prefix="atr-deb.")
    try:
        src = os.path.join(work, "src")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(SRC, src, symlinks=True, ignore=skip_top)
        for sub in ("debian/.debhelper", "debian/alloctrace"):
            shutil.rmtree(os.path.join(src, sub), ignore_errors=True)
        t0 = time.monotonic()
        r = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, timeout=900,
                env=dict(os.environ, DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=%d" % (os.cpu_count() or 2)))
        print("dpkg-buildpackage: %.0f s" % (time.monotonic() - t0))
        if not check(r.returncode == 0, "dpkg-buildpackage failed:\n%s" % (r.stdout + r.stderr)[-4000:]):
            return 1
        debs = [d for d in glob.glob(os.path.join(work, "alloctrace_*.deb"))]
        if not check(len(debs) == 1, "want one alloctrace_*.deb, got %s" % debs):
            return 1
        deb = debs[0]
        with open(os.path.join(SRC, "CMakeLists.txt")) as f:
            pv = re.search(r"project\(alloctrace VERSION ([\d.]+)", f.read()).group(1)
        ver = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
        check(ver.split("-")[0] == pv, "package version %s is not the project version %s "
              "(debian/changelog vs CMakeLists.txt)" % (ver, pv))

        root = os.path.join(work, "root")
        shutil.rmtree(root, ignore_errors=True)
        r = run(["dpkg", "-x", deb, root])
        check(r.returncode == 0, "dpkg -x failed: %s" % r.stderr)
        arch = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
        for f in ("usr/bin/alloctrace", "usr/bin/trace2wl", "usr/bin/trace_run",
                  "usr/lib/%s/alloctrace/liballoctrace.so" % arch,
                  "usr/lib/%s/alloctrace/libmtracectl.so" % arch,
                  "usr/libexec/alloctrace/alloctrace-replay",
                  "usr/lib/%s/pkgconfig/alloctrace.pc" % arch, "usr/include/alloctrace.h",
                  "usr/share/man/man1/alloctrace.1.gz", "usr/share/man/man1/alloctrace-record.1.gz",
                  "usr/share/man/man1/trace2wl.1.gz", "usr/share/doc/alloctrace/CLI.md.gz",
                  "usr/share/bash-completion/completions/alloctrace"):
            check(os.path.lexists(os.path.join(root, f)), "not in the package: /%s" % f)
        with open(os.path.join(root, "usr/lib/%s/pkgconfig/alloctrace.pc" % arch)) as f:
            check("prefix=/usr\n" in f.read(), "alloctrace.pc: prefix is not /usr")

        # the installed programs, nothing else
        exe = os.path.join(root, "usr/bin/alloctrace")
        tr = os.path.join(work, "tr")
        shutil.rmtree(tr, ignore_errors=True)
        r = run([exe, "record", "-o", tr, "--stacks", "--", "/bin/sh", "-c", "ls / >/dev/null"],
                cwd=work, env=clean_env())
        check(r.returncode == 0 and "recorded" in r.stderr,
              "record from the package (exit %d): %s" % (r.returncode, r.stderr))
        r = run([exe, "info", tr], env=clean_env())
        check(r.returncode == 0 and "malloc" in r.stdout, "info from the package: %s" % r.stderr)
        r = run([exe, "report", tr], env=clean_env())
        check(r.returncode == 0 and "malloc" in r.stdout, "report from the package: %s" % r.stderr)
        wl = os.path.join(work, "w.wl")
        r = run([os.path.join(root, "usr/bin/trace2wl"), wl, tr], env=clean_env())
        check(r.returncode == 0, "trace2wl from the package: %s" % r.stderr)
        r = run([os.path.join(root, "usr/bin/trace_run"), wl], env=clean_env())
        check(r.returncode == 0 and "Max RSS" in r.stdout, "trace_run from the package: %s" % r.stderr)
        r = run([exe, "replay", wl, "--think", "off", "--json"], env=clean_env())
        check(r.returncode == 0 and '"max_rss_kb"' in r.stdout,
              "replay from the package (its runner in /usr/libexec/alloctrace): %s" % r.stderr)

        for page in sorted(glob.glob(os.path.join(root, "usr/share/man/man1/*.1.gz"))):
            m = run(["man", "--warnings", "-l", page], env=clean_env(MANWIDTH="80", LC_ALL="C.UTF-8"))
            check(m.returncode == 0 and not m.stderr.strip() and "NAME" in m.stdout,
                  "man -l %s: %s" % (os.path.basename(page), m.stderr))
        comp = os.path.join(root, "usr/share/bash-completion/completions/alloctrace")
        r = run(["bash", "-c", 'source "$0" && complete -p alloctrace', comp])
        check(r.stdout.strip() == "complete -F _alloctrace alloctrace",
              "the packaged completion: %r %s" % (r.stdout, r.stderr))

        t0 = time.monotonic()
        r = run(["lintian", "--fail-on", "error", "--info", "--pedantic", "--display-experimental",
                 deb], env=dict(os.environ))
        tags = [ln for ln in r.stdout.splitlines() if re.match(r"[EWIPX]: ", ln)]
        print("lintian: %.0f s, %d tags" % (time.monotonic() - t0, len(tags)))
        for t in tags:
            print("  " + t)
        check(r.returncode == 0 and not any(t.startswith("E: ") for t in tags),
              "lintian reports errors (exit %d): %s" % (r.returncode, r.stderr[-2000:]))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("deb: %d problems" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
