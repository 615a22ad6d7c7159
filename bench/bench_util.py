"""bench_util.py - helpers shared by bench/callcost.py and bench/zstd_sweep.py."""
import subprocess
import sys


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
