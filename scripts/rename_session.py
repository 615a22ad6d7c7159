#!/usr/bin/env python3
"""rename_session.py - issue 10's mechanical renames, regenerated from the
headers so that it can be rerun after a rebase or merge:

  struct rep_ctx                  -> struct an_session
  rep_<x> declared in an_session.h -> an_session_<x>
  rep_write_<fmt> (output headers) -> out_<fmt>_write
  other rep_<x> of output headers  -> out_<x>  (rep_fold_stacks, the assets:
                                     rep_asset_ prefix everywhere)
  cmp_<x> declared in out_compare.h -> out_compare_<x>

Only the names declared in those headers are renamed (file-local helpers
such as qsort's cmp_u64 keep theirs), as whole words, in every tracked
source, test, doc and CMake file.  Run from the repository root, then
`clang-format -i` the C files it changed (names grow), build and test.

usage: scripts/rename_session.py [--dry-run]
"""
import re
import subprocess
import sys

WORD = r"[A-Za-z0-9_]+"


def names(path, prefix):
    with open(path) as f:
        return set(re.findall(r"\b%s%s" % (prefix, WORD), f.read()))


def mapping():
    m = {}
    for n in names("src/analysis/an_session.h", "rep_"):
        m[n] = "an_session" if n == "rep_ctx" else "an_session_" + n[4:]
    out_h = subprocess.run(["git", "ls-files", "src/output/*.h"], capture_output=True, text=True,
                           check=True).stdout.split()
    for h in out_h:
        for n in names(h, "rep_"):
            if n in m:
                continue
            w = re.fullmatch(r"rep_write_(%s)" % WORD, n)
            m[n] = "out_%s_write" % w.group(1) if w else "out_" + n[4:]
    for n in names("src/output/out_compare.h", "cmp_"):
        m[n] = "out_compare_" + n[4:]
    return m


def main():
    dry = "--dry-run" in sys.argv[1:]
    m = mapping()
    files = subprocess.run(["git", "ls-files", "*.c", "*.h", "*.py", "*.md", "*.cmake",
                            "*CMakeLists.txt", "*.sh", "*.in"],
                           capture_output=True, text=True, check=True).stdout.split()
    pat = re.compile(r"\b(%s)\b" % "|".join(sorted(map(re.escape, m), key=len, reverse=True)))
    changed = []
    for path in files:
        if path == "scripts/rename_session.py":
            continue
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        new = pat.sub(lambda x: m[x.group(1)], text)
        # the assets' C names are made from this prefix (src/CMakeLists.txt,
        # tests/cross_aarch64.sh)
        new = new.replace("rep_asset_", "out_asset_")
        new = new.replace("rep_write_<format>", "out_<format>_write")
        if new != text:
            changed.append(path)
            if not dry:
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(new)
    for k in sorted(m):
        print("%s -> %s" % (k, m[k]))
    print("%d files %s" % (len(changed), "would change" if dry else "changed"), file=sys.stderr)
    for p in changed:
        print("  " + p, file=sys.stderr)


if __name__ == "__main__":
    main()
