#!/usr/bin/env python3
"""test_install.py - `cmake --install` into a scratch prefix, then only the
installed files: the layout, `record` finding its library and `replay`
its runner relative to itself (also after the whole prefix is moved), info,
report, convert and replay of that trace, the seed names, pkg-config and a program built with alloctrace.h
against it, man pages through MANPATH, and DESTDIR staging.

usage: test_install.py --build DIR
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

from inst_common import check, clean_env, errors, run


def cache_var(build, name):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        m = re.search(r"^%s:\w+=(.*)$" % name, f.read(), flags=re.M)
    return m.group(1) if m else None


def record_info_report(bindir, work, label):
    """record a real program with the installed alloctrace, then info, report,
    convert and replay."""
    exe = os.path.join(bindir, "alloctrace")
    tr = os.path.join(work, "tr-" + label)
    r = run([exe, "record", "-o", tr, "--", "/bin/sh", "-c", "ls / >/dev/null"], cwd=work,
            env=clean_env())
    if not check(r.returncode == 0 and "recorded" in r.stderr,
                 "%s: installed record failed (exit %d): %s" % (label, r.returncode, r.stderr)):
        return
    r = run([exe, "info", "--json", tr], env=clean_env())
    check(r.returncode == 0 and '"total_calls"' in r.stdout,
          "%s: installed info failed: %s" % (label, r.stderr))
    m = re.findall(r'"total_calls": *(\d+)', r.stdout)
    check(m and sum(map(int, m)) > 0, "%s: the installed record traced no calls" % label)
    r = run([exe, "report", tr], env=clean_env())
    check(r.returncode == 0 and "malloc" in r.stdout,
          "%s: installed report failed: %s" % (label, r.stderr))
    # replay executes the runner from the installed libexec directory
    wl = os.path.join(work, "wl-" + label)
    r = run([exe, "convert", "--no-progress", "-q", tr, "-o", wl], env=clean_env())
    check(r.returncode == 0, "%s: installed convert failed: %s" % (label, r.stderr))
    r = run([exe, "replay", wl, "--think", "off", "--json"], env=clean_env())
    check(r.returncode == 0 and '"max_rss_kb"' in r.stdout,
          "%s: installed replay failed (exit %d): %s" % (label, r.returncode, r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    libdir = cache_var(build, "CMAKE_INSTALL_LIBDIR") or "lib"
    libexecdir = cache_var(build, "CMAKE_INSTALL_LIBEXECDIR") or "libexec"
    work = tempfile.mkdtemp(prefix="atr-install.")
    try:
        prefix = os.path.join(work, "p")
        r = run(["cmake", "--install", build, "--prefix", prefix])
        if not check(r.returncode == 0, "cmake --install failed: %s%s" % (r.stdout, r.stderr)):
            return 1
        pkglib = os.path.join(libdir, "alloctrace")
        want = ["bin/alloctrace", "bin/trace2wl", "bin/trace_run",
                pkglib + "/liballoctrace.so", pkglib + "/libmtracectl.so",
                libexecdir + "/alloctrace/alloctrace-replay",
                "include/alloctrace.h", libdir + "/pkgconfig/alloctrace.pc",
                "share/man/man1/alloctrace.1", "share/man/man1/alloctrace-record.1",
                "share/bash-completion/completions/alloctrace"]
        cmds = run([os.path.join(build, "alloctrace"), "--list-commands"]).stdout.splitlines()
        want += ["share/man/man1/alloctrace-%s.1" % c.split("\t")[0] for c in cmds]
        for w in want:
            check(os.path.exists(os.path.join(prefix, w)), "not installed: %s" % w)
        for link, target in (("bin/trace2wl", "alloctrace"), ("bin/trace_run", "alloctrace"),
                             (pkglib + "/libmtracectl.so", "liballoctrace.so"),
                             ("share/man/man1/trace2wl.1", "alloctrace-convert.1"),
                             ("share/man/man1/trace_run.1", "alloctrace-replay.1")):
            p = os.path.join(prefix, link)
            check(os.path.islink(p) and os.readlink(p) == target,
                  "%s should be a symlink to %s" % (link, target))
        r = run(["readelf", "-d", os.path.join(prefix, "bin/alloctrace")])
        check(build not in r.stdout, "the installed alloctrace has the build tree in RPATH/RUNPATH")

        bindir = os.path.join(prefix, "bin")
        r = run([os.path.join(bindir, "trace2wl"), "--help"], env=clean_env())
        check(r.returncode == 0 and "trace2wl" in r.stdout, "installed trace2wl --help failed")
        record_info_report(bindir, work, "prefix")

        # pkg-config, and a program built against the installed header, traced
        # by LD_PRELOAD of the library pkg-config names
        pcenv = clean_env(PKG_CONFIG_PATH=os.path.join(prefix, libdir, "pkgconfig"))
        r = run(["pkg-config", "--cflags", "alloctrace"], env=pcenv)
        check(r.returncode == 0 and r.stdout.strip() == "-I%s/include" % prefix,
              "pkg-config --cflags alloctrace: %r %s" % (r.stdout, r.stderr))
        cflags = r.stdout.split()
        preload = run(["pkg-config", "--variable=preload", "alloctrace"], env=pcenv).stdout.strip()
        check(preload == os.path.join(prefix, pkglib, "liballoctrace.so"),
              "pkg-config --variable=preload: %r" % preload)
        csrc = os.path.join(work, "m.c")
        with open(csrc, "w") as f:
            f.write('#include <alloctrace.h>\n#include <stdlib.h>\nint main(void)\n{\n'
                    '\talloctrace_marker("installed");\n\tfree(malloc(10));\n'
                    '\treturn alloctrace_sync() > 0 ? 0 : 3;\n}\n')
        prog = os.path.join(work, "m")
        r = run(["cc", "-Wall", "-Werror"] + cflags + [csrc, "-o", prog], env=pcenv)
        if check(r.returncode == 0, "compiling against the installed alloctrace.h: %s" % r.stderr):
            atr = os.path.join(work, "m.atr")
            r = run([prog], env=clean_env(LD_PRELOAD=preload, ALLOCTRACE_FILE=atr))
            check(r.returncode == 0, "the program with the tracer preloaded exited %d: %s"
                  % (r.returncode, r.stderr))
            r = run([os.path.join(bindir, "alloctrace"), "dump", atr], env=clean_env())
            check('marker "installed"' in r.stdout, "the marker is not in the trace: %s" % r.stderr)

        # man pages through MANPATH
        r = run(["man", "-w", "alloctrace-record"],
                env=clean_env(MANPATH=os.path.join(prefix, "share", "man")))
        check(r.returncode == 0 and r.stdout.strip().startswith(prefix),
              "man -w alloctrace-record with MANPATH=prefix: %r %s" % (r.stdout, r.stderr))

        # the tree is relocatable: move it, record again
        moved = os.path.join(work, "moved")
        os.rename(prefix, moved)
        record_info_report(os.path.join(moved, "bin"), work, "moved")

        # DESTDIR staging: files under DESTDIR, paths inside them without it
        stage = os.path.join(work, "stage")
        r = run(["cmake", "--install", build, "--prefix", "/opt/at"],
                env=dict(os.environ, DESTDIR=stage))
        check(r.returncode == 0, "DESTDIR install failed: %s" % r.stderr)
        pc = os.path.join(stage, "opt/at", libdir, "pkgconfig", "alloctrace.pc")
        if check(os.path.exists(pc), "DESTDIR install: no %s" % pc):
            with open(pc) as f:
                check("prefix=/opt/at\n" in f.read(), "DESTDIR leaked into alloctrace.pc")
        record_info_report(os.path.join(stage, "opt/at/bin"), work, "destdir")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("install: %d problems" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
