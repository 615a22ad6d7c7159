"""inst_common.py - what the installation tests share: a failure list,
subprocess runs, and an environment that points at no build tree."""
import os
import subprocess

errors = []


def check(cond, what):
    if not cond:
        errors.append(what)
        print("FAIL:", what)
    return cond


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def clean_env(**extra):
    """No build tree anywhere: a minimal PATH, no ALLOCTRACE_* settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ALLOCTRACE_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env["PATH"] = "/usr/bin:/bin"
    env.update(extra)
    return env
