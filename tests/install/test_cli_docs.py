#!/usr/bin/env python3
"""test_cli_docs.py - the man pages and docs/CLI.md against the binary.

usage: test_cli_docs.py --build DIR

Commands come from `alloctrace --list-commands`, each command's options from
`alloctrace CMD --list-options` (its getopt table, see cmdu_getopt()).  Fails,
saying what to add where, when a command has no `## CMD` section in
docs/CLI.md, an option is missing from that section or from `CMD --help`, a
synopsis names an option the command does not take, or a man page is missing
or does not render cleanly with `man -l`.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLI_MD = os.path.join(HERE, "..", "..", "docs", "CLI.md")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def sections(md):
    md = re.sub(r"<!--.*?-->", "", md, flags=re.S)
    secs, cur = {}, None
    for ln in md.splitlines():
        if ln.startswith("## "):
            cur = ln[3:].strip()
            secs[cur] = []
        elif cur:
            secs[cur].append(ln)
    return {k: "\n".join(v) for k, v in secs.items()}


def mentions(text, opt):
    return re.search(r"(?<![\w-])--%s(?![\w-])" % re.escape(opt), text) is not None


def render(page):
    """`man -l` of a page: (text, groff's complaints)."""
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    r = run(["man", "--warnings", "-l", page], env=env)
    text = r.stdout.replace("\u2010", "-").replace("\u2212", "-")
    return text, (r.stderr.strip() + ("" if r.returncode == 0 else " (exit %d)" % r.returncode))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    exe = os.path.join(a.build, "alloctrace")
    mandir = os.path.join(a.build, "dist", "man")
    with open(CLI_MD, encoding="utf-8") as f:
        secs = sections(f.read())
    errors = []
    commands = [ln.split("\t") for ln in run([exe, "--list-commands"]).stdout.splitlines()]
    if len(commands) < 5:
        errors.append("`alloctrace --list-commands` lists %d commands" % len(commands))
    for cmd, summary in commands:
        lo = run([exe, cmd, "--list-options"])
        longs = [ln.split()[0].rstrip("=")[2:] for ln in lo.stdout.splitlines() if ln.startswith("--")]
        if lo.returncode != 0 or "help" not in longs:
            errors.append("`alloctrace %s --list-options` did not print its options: parse them "
                          "with cmdu_getopt() (src/cmds/cmds.h), not getopt_long()" % cmd)
            continue
        helptext = run([exe, cmd, "--help"]).stdout
        sec = secs.get(cmd)
        if sec is None:
            errors.append("docs/CLI.md has no '## %s' section: add one (its first code block is "
                          "the synopsis); it becomes the man page alloctrace-%s(1)" % (cmd, cmd))
        for opt in longs:
            if opt == "help":
                continue
            if sec is not None and not mentions(sec, opt):
                errors.append("option --%s of `alloctrace %s` is not documented in the '## %s' "
                              "section of docs/CLI.md (the man page is made from it)"
                              % (opt, cmd, cmd))
            if not mentions(helptext, opt):
                errors.append("option --%s of `alloctrace %s` is missing from its --help text "
                              "(the %s_usage() function)" % (opt, cmd, cmd))
        if sec is not None:
            syn = re.match(r"\s*```\n(.*?)```", sec, flags=re.S)
            if not syn:
                errors.append("the '## %s' section of docs/CLI.md does not start with a code "
                              "block (the synopsis)" % cmd)
            else:
                for opt in re.findall(r"(?<![\w-])--([a-z][\w-]*)", syn.group(1)):
                    if opt not in longs:
                        errors.append("the synopsis of '## %s' in docs/CLI.md names --%s, which "
                                      "`alloctrace %s` does not take" % (cmd, opt, cmd))
        page = os.path.join(mandir, "alloctrace-%s.1" % cmd)
        if not os.path.exists(page):
            errors.append("no man page %s (built from docs/CLI.md by dist/gen_man.py)" % page)
            continue
        text, warn = render(page)
        if warn:
            errors.append("man -l %s: %s" % (page, warn))
        if ("alloctrace-%s - %s" % (cmd, summary)) not in " ".join(text.split()):
            errors.append("%s: NAME line is not 'alloctrace-%s - %s'" % (page, cmd, summary))
        for opt in longs:
            if opt != "help" and not mentions(text, opt):
                errors.append("%s does not show --%s" % (page, opt))
    page = os.path.join(mandir, "alloctrace.1")
    if not os.path.exists(page):
        errors.append("no man page %s" % page)
    else:
        text, warn = render(page)
        if warn:
            errors.append("man -l %s: %s" % (page, warn))
        for cmd, _ in commands:
            if "alloctrace-%s(1)" % cmd not in text:
                errors.append("alloctrace(1) does not list alloctrace-%s(1)" % cmd)
    # a far miss prints the command list (the near misses are golden tests)
    r = run([exe, "xyzzy"])
    if r.returncode != 2 or "unknown command 'xyzzy'" not in r.stderr or "usage:" not in r.stderr \
            or "did you mean" in r.stderr:
        errors.append("`alloctrace xyzzy`: want exit 2, 'unknown command' and the usage, got "
                      "exit %d:\n%s" % (r.returncode, r.stderr))
    for e in errors:
        print("FAIL:", e)
    print("%d commands checked, %d problems" % (len(commands), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
