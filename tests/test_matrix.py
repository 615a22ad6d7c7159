#!/usr/bin/env python3
"""test_matrix.py - real programs run unchanged under `alloctrace record`.

Each case runs a real program twice, untraced and under
`alloctrace record -o TMPDIR -- ...`, in two fresh directories laid out the
same way, and requires

  * the same exit status and the same stdout;
  * the same stderr, less the one summary line of `alloctrace record`;
  * the same files produced (where the case makes any);
  * `alloctrace info TMPDIR --json`: every traced process made calls
    (the whole tree > 0), lost_records == 0 and unknown_frees == 0.

Cases: python (/usr/bin/python3, not a pyenv shim), gcc (-c of a small C
file; the driver spawns cc1 and as), git (init, add, commit, log, ... each
command its own recording; fixed dates and identity, so hashes match),
sqlite3 (:memory:, 1000 inserts), shell (/bin/sh pipelines and subshells:
children made by fork() alone that free blocks inherited from the parent).
They need the Debian packages python3, gcc, binutils, git, sqlite3 and dash
(coreutils for seq/sort/head/tr/wc); a missing program fails the case with
a clear message.

usage: test_matrix.py [--build DIR] [--keep] CASE...   (or: all, --list; tests/atr_runner.py)
"""

import json
import os
import shutil
import subprocess
import sys

import atr_runner
from atr_runner import Failure

TIMEOUT = 60


def need(path, package):
    if not os.access(path, os.X_OK):
        raise Failure("%s is not installed (Debian package: %s); the project's setup "
                      "script must install it" % (path, package))
    return path


def tool(name, package):
    for d in ("/usr/bin", "/bin", "/usr/local/bin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    p = shutil.which(name)
    if p:
        return p
    return need("/usr/bin/" + name, package)


def base_env(home):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("ALLOCTRACE_")
           and not k.startswith("MTRACE_CTL") and not k.startswith("GIT_")
           and not k.startswith("PYTHON")}
    env.update({
        "HOME": home,
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.invalid",
        "GIT_AUTHOR_DATE": "2020-01-02T03:04:05Z",
        "GIT_COMMITTER_DATE": "2020-01-02T03:04:05Z",
        "GIT_TERMINAL_PROMPT": "0",
    })
    return env


# ---- the cases: each returns (argv, stdin, setup(dir), files to compare) ---

PY_SCRIPT = r'''
import json, hashlib, collections
d = {("k%05d" % i): [i, str(i) * (i % 7), {"x": i * 0.5}] for i in range(20000)}
s = json.dumps(d, sort_keys=True)
back = json.loads(s)
assert back == json.loads(json.dumps(back))
c = collections.Counter(len(v[1]) for v in back.values())
words = sorted(("w%d" % (i * 7919 % 10007)) for i in range(10000))
blob = bytearray()
for i in range(2000):
    blob += bytes(i % 256 for _ in range(100))
print(len(s), hashlib.sha256(s.encode()).hexdigest())
print(sorted(c.items()))
print(words[:3], words[-3:], len(set(words)))
print(hashlib.md5(bytes(blob)).hexdigest())
'''


def case_python():
    py = need("/usr/bin/python3", "python3")
    return [py, "-I", "-c", PY_SCRIPT], None, None, []


C_FILE = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node { struct node *next; int v; };

static int sum(const struct node *n)
{
	int s = 0;
	for (; n; n = n->next)
		s += n->v;
	return s;
}

int work(int n)
{
	struct node *h = NULL;
	for (int i = 0; i < n; i++) {
		struct node *x = malloc(sizeof *x);
		if (!x)
			abort();
		x->v = i;
		x->next = h;
		h = x;
	}
	int s = sum(h);
	while (h) {
		struct node *nx = h->next;
		free(h);
		h = nx;
	}
	char buf[64];
	snprintf(buf, sizeof buf, "%d", s);
	return (int)strlen(buf);
}
'''


def case_gcc():
    gcc = tool("gcc", "gcc")

    def setup(d):
        with open(os.path.join(d, "small.c"), "w") as f:
            f.write(C_FILE)
    return [gcc, "-O2", "-Wall", "-c", "small.c", "-o", "small.o"], None, setup, ["small.o"]


def case_git():
    git = tool("git", "git")

    def setup(d):
        os.mkdir(os.path.join(d, "repo"))
        os.mkdir(os.path.join(d, "repo", "sub"))
        with open(os.path.join(d, "repo", "a.txt"), "w") as f:
            f.write("hello\nworld\n")
        with open(os.path.join(d, "repo", "sub", "numbers.txt"), "w") as f:
            f.write("".join("%d\n" % i for i in range(1, 501)))

    def edit(d):
        with open(os.path.join(d, "repo", "a.txt"), "a") as f:
            f.write("more\n")

    g = [git, "-C", "repo"]
    steps = [
        [git, "init", "-q", "-b", "main", "repo"],
        g + ["add", "a.txt", "sub"],
        g + ["commit", "-q", "-m", "first commit"],
        edit,
        g + ["commit", "-q", "-a", "-m", "second commit"],
        g + ["log", "--format=%H %an %s"],
        g + ["log", "--stat", "--format=%h %s"],
        g + ["status", "--porcelain"],
        g + ["cat-file", "-p", "HEAD^{tree}"],
    ]
    return steps, None, setup, []


SH_SCRIPT = r'''
set -e
seq 1 2000 | sort -rn | head -3
x=$(echo sub shell | tr a-z A-Z); echo "$x"
( cd /; pwd )
for i in 1 2 3; do echo "line $i"; done | wc -l
'''


def case_shell():
    """A shell's pipelines and subshells: children made by fork() alone,
    which free blocks they inherited from the parent shell."""
    sh = need("/bin/sh", "dash")
    return [sh, "-c", SH_SCRIPT], None, None, []


def case_sqlite3():
    sq = tool("sqlite3", "sqlite3")
    sql = ["create table t(id integer primary key, name text, v real);"]
    sql.append("begin;")
    for i in range(1000):
        sql.append("insert into t(name, v) values('name-%d', %d.5);" % (i, i))
    sql.append("commit;")
    sql.append("create index t_name on t(name);")
    sql.append("select count(*) from t;")
    sql.append("select sum(v), min(name), max(name) from t;")
    sql.append("select name from t where id % 250 = 0 order by id;")
    return [sq, "-batch", ":memory:"], "\n".join(sql) + "\n", None, []


CASES = {
    "python": case_python,
    "gcc": case_gcc,
    "git": case_git,
    "shell": case_shell,
    "sqlite3": case_sqlite3,
}


# ---- running -----------------------------------------------------------------

def run(cmd, env, cwd, stdin):
    try:
        return subprocess.run(cmd, env=env, cwd=cwd, input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT,
                              universal_newlines=True, errors="replace")
    except subprocess.TimeoutExpired as e:
        raise Failure("timed out after %ss: %s\nstdout: %s\nstderr: %s"
                      % (TIMEOUT, " ".join(cmd), e.stdout, e.stderr))


def strip_summary(stderr):
    """stderr less the summary line of `alloctrace record`."""
    lines = stderr.splitlines(True)
    out = [l for l in lines if not l.startswith("alloctrace: recorded ")]
    if len(lines) - len(out) != 1:
        raise Failure("expected exactly one 'alloctrace: recorded ...' line on stderr, got "
                      "%d:\n%s" % (len(lines) - len(out), stderr))
    return "".join(out)


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return "line %d:\n  untraced: %r\n  traced:   %r" % (i + 1, x, y)
    return "untraced has %d lines, traced %d" % (len(al), len(bl))


def run_steps(steps, env, cwd, stdin, cli=None, work=None):
    """Run each step (an argv, or a callable(cwd) that changes files); with
    cli, each argv under `alloctrace record` into its own trace directory.
    Returns ([(argv, CompletedProcess, tracedir)], ...)."""
    out = []
    for i, st in enumerate(steps):
        if callable(st):
            st(cwd)
            continue
        if cli:
            tdir = os.path.join(work, "trace-%d" % i)
            os.mkdir(tdir)
            p = run([cli, "record", "-o", tdir, "--"] + st, env, cwd, stdin)
        else:
            tdir = None
            p = run(st, env, cwd, stdin)
        out.append((st, p, tdir))
    return out


def check_info(cli, tdir, label, errs):
    """Checks on one trace directory; returns [(exe, calls)]."""
    ip = subprocess.run([cli, "info", tdir, "--json"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, universal_newlines=True, timeout=TIMEOUT)
    if ip.returncode != 0:
        errs.append("%s: alloctrace info --json failed (%d):\n%s"
                    % (label, ip.returncode, ip.stderr))
        return []
    procs = json.loads(ip.stdout).get("processes") or []
    if not procs:
        errs.append("%s: info shows no process" % label)
    bad = []
    for p in procs:
        plabel = "%s: pid %s (%s)" % (label, p.get("pid"), p.get("exe"))
        for k in ("lost_records", "unknown_frees"):
            if p.get(k) != 0:
                errs.append("%s: %s = %r, expected 0" % (plabel, k, p.get(k)))
                bad.append(p)
    if sum(sum((p.get("calls") or {}).values()) for p in procs) <= 0:
        errs.append("%s: no calls recorded at all" % label)
    if bad:
        errs.append("%s: info --json of the processes in question:\n%s"
                    % (label, json.dumps(bad, indent=1)[:4000]))
    return [(os.path.basename(str(p.get("exe"))), sum((p.get("calls") or {}).values()))
            for p in procs]


def run_case(fn, c):
    cli = c.alloctrace
    if not os.access(cli, os.X_OK):
        raise Failure("missing %s (build the tree first)" % cli)
    cmd, stdin, setup, files = fn()
    steps = cmd if isinstance(cmd[0], list) else [cmd]
    work = c.tmp
    runs = {}
    for mode in ("plain", "traced"):
        d = os.path.join(work, mode)
        home = os.path.join(work, mode + "-home")
        os.mkdir(d)
        os.mkdir(home)
        if setup:
            setup(d)
        env = base_env(home)
        runs[mode] = (run_steps(steps, env, d, stdin,
                                cli if mode == "traced" else None, work), d)
    (plain, pd), (traced, td) = runs["plain"], runs["traced"]
    errs = []
    procs = []
    for (argv, pp, _), (_, tp, tdir) in zip(plain, traced):
        what = " ".join(" ".join(os.path.basename(a) if i == 0 else a
                                 for i, a in enumerate(argv)).split())
        if len(what) > 60:
            what = what[:57] + "..."
        if pp.returncode != 0:
            errs.append("[%s] the untraced run itself failed (status %d):\n%s"
                        % (what, pp.returncode, pp.stderr))
        if pp.returncode != tp.returncode:
            errs.append("[%s] exit status: untraced %d, traced %d"
                        % (what, pp.returncode, tp.returncode))
        if pp.stdout != tp.stdout:
            errs.append("[%s] stdout differs: %s" % (what, first_diff(pp.stdout, tp.stdout)))
        try:
            terr = strip_summary(tp.stderr)
            if pp.stderr != terr:
                errs.append("[%s] stderr differs: %s" % (what, first_diff(pp.stderr, terr)))
        except Failure as e:
            errs.append("[%s] %s" % (what, e))
        procs += check_info(cli, tdir, "[%s]" % what, errs)
    for f in files:
        a, b = os.path.join(pd, f), os.path.join(td, f)
        if not os.path.exists(b):
            errs.append("traced run did not produce %s" % f)
        elif open(a, "rb").read() != open(b, "rb").read():
            errs.append("%s differs between the untraced and the traced run" % f)
    if errs:
        raise Failure("\n".join(errs))
    return "%d process(es), %d calls: %s" % (
        len(procs), sum(c for _, c in procs),
        ", ".join("%s:%d" % pc for pc in procs[:8]) + (" ..." if len(procs) > 8 else ""))


if __name__ == "__main__":
    sys.exit(atr_runner.main(CASES, __doc__, call=run_case, tmp_prefix="atr-matrix-"))
