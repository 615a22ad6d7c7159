"""bench_util.py - helpers and programs shared by bench/format_bench.py, callcost.py and zstd_sweep.py."""
import os
import subprocess
import sys

PYJSON = r'''
import json
d = [{"id": i, "name": "item%d" % i, "tags": ["x", "y", str(i)], "v": i * 0.5} for i in range(PYN)]
s = json.dumps(d)
e = json.loads(s)
print(len(s), len(e))
'''

CXX = r'''
#include <map>
#include <string>
#include <vector>
template <class T> struct Tree {
  std::map<std::string, std::vector<T>> m;
  void add(const std::string &k, T v) { m[k].push_back(v); }
};
int main() {
  Tree<int> t;
  for (int i = 0; i < 100; i++)
    t.add(std::to_string(i), i);
  return (int)t.m.size();
}
'''


def sh(cmd, **kw):
    """Run cmd, capture its output; a failure raises with its stderr."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return r


def finish(work, out, path):
    """Remove the work directory, print the report, copy it to path."""
    subprocess.run(["rm", "-rf", work])
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if path:
        with open(path, "w") as fo:
            fo.write(text)


def real_programs(work, pyn):
    """Write the python3 script (pyn records) and the preprocessed C++ file
    t.ii into work; returns the path of cc1plus."""
    with open(os.path.join(work, "pyjson.py"), "w") as f:
        f.write(PYJSON.replace("PYN", str(pyn)))
    with open(os.path.join(work, "t.cpp"), "w") as f:
        f.write(CXX)
    sh(["g++", "-O2", "-E", "t.cpp", "-o", "t.ii"], cwd=work)
    return sh(["g++", "-print-prog-name=cc1plus"]).stdout.strip()


def runtime(out, cmd):
    """Run cmd; write its wall, user and system seconds to the file out, as
    /usr/bin/time -f "%e %U %S" would but from wait4's rusage, to the
    microsecond (/usr/bin/time prints two decimals: an `info` of
    cc1plus's trace takes ~0.03 s, a `convert` of t10000 ~0.08 s).  Not
    its max RSS: the rusage of a child Python forked keeps Python's own
    high-water mark from before the exec.  Returns cmd's exit code."""
    import time
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    with open(out, "w") as f:
        f.write("%.6f %.6f %.6f\n" % (wall, ru.ru_utime, ru.ru_stime))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    # for the shell scripts: `bench_util.py pyjson N` or `bench_util.py cxx`
    # print the program; `bench_util.py runtime OUT CMD...` times CMD
    if sys.argv[1:2] == ["pyjson"] and len(sys.argv) == 3:
        print(PYJSON.replace("PYN", str(int(sys.argv[2]))))
    elif sys.argv[1:] == ["cxx"]:
        print(CXX)
    elif sys.argv[1:2] == ["runtime"] and len(sys.argv) >= 4:
        sys.exit(runtime(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit("usage: bench_util.py pyjson N | cxx | runtime OUT CMD...")
