#!/usr/bin/env bash
# Remakes docs/report-screenshot.png: traces /usr/bin/python3 (the system
# interpreter, not a pyenv shim) with --stacks running a small workload
# with markers (alloctrace_marker through ctypes), writes the HTML report
# and screenshots it with headless Chromium.
#   scripts/report-screenshot.sh [BUILD_DIR] [OUT.png]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/report-screenshot.png}
work=$(mktemp -d /tmp/atr-shot.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/demo.py" <<'PY'
import ctypes, json, threading, time
lib = ctypes.CDLL(None)
try:
    mark = lib.alloctrace_marker_impl
    mark.argtypes = [ctypes.c_char_p]
except AttributeError:
    mark = lambda s: 0
mark(b"load")
rows = [{"id": i, "name": "item-%d" % i, "tags": ["x"] * (i % 7), "blob": "y" * (i % 3000)}
        for i in range(60000)]
time.sleep(0.02)
mark(b"encode")
text = json.dumps(rows)
time.sleep(0.02)
mark(b"workers")
def work(n):
    acc = []
    for i in range(n):
        acc.append(bytearray(64 + (i * 37) % 20000))
        if len(acc) > 500:
            acc = acc[250:]
ts = [threading.Thread(target=work, args=(30000 * (k + 1),)) for k in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
mark(b"free")
del rows, text
time.sleep(0.02)
PY
"$build/alloctrace" record --stacks -o "$work/tr" -- /usr/bin/python3 "$work/demo.py"
"$build/alloctrace" report --html "$work/report.html" "$work/tr"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --hide-scrollbars --screenshot="$out" \
  --window-size=1400,2500 "file://$work/report.html" 2>/dev/null
echo "wrote $out"
