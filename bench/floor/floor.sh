#!/usr/bin/env bash
# The floor under issue 9's "<= 12 ns added per call": mallocbench (1
# thread, 16..512 B) untraced, under bench/floor/shim.c without and with
# one TSC read per call, and under liballoctrace.so (ALLOCTRACE_ENCODE as
# `record` sets it: later), interleaved; worker CPU ns per call (the
# benchmark prints its worker threads' CPU time), medians (min-max).
#   bench/floor/floor.sh BUILD_DIR [ITERS [ROUNDS]]
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
N=${2:-20000000} R=${3:-7}
H=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/floor.XXXXXX)
trap 'rm -rf "$W"' EXIT
gcc -O2 -pthread -o "$W/mallocbench" "$H/../mallocbench.c"
gcc -O2 -shared -fPIC -o "$W/shim0.so" "$H/shim.c"
gcc -O2 -shared -fPIC -DSTAMP -o "$W/shim1.so" "$H/shim.c"
uptime | sed 's/^/# /'
for r in $(seq "$R"); do
  for v in untraced shim shim+tsc alloctrace; do
    case $v in
      untraced) pre= ;;
      shim) pre=$W/shim0.so ;;
      shim+tsc) pre=$W/shim1.so ;;
      alloctrace) pre=$B/liballoctrace.so ;;
    esac
    mkdir -p "$W/t"; o=$(cd "$W" && ALLOCTRACE_ENCODE=later ALLOCTRACE_DIR="$W/t" LD_PRELOAD=$pre ./mallocbench 1 "$N")
    rm -rf "$W/t"
    echo "$v $(echo "$o" | awk -F= '/^worker_cpu_ns=/{w=$2} /^calls=/{c=$2} END{printf "%.2f", w/c}')"
  done
done | python3 -c '
import sys, statistics
v = {}
for line in sys.stdin:
    k, x = line.split()
    v.setdefault(k, []).append(float(x))
for k in ("untraced", "shim", "shim+tsc", "alloctrace"):
    a = v.get(k, [])
    if a:
        print("%-11s ns/call median %.2f (%.2f-%.2f) of %d" % (k, statistics.median(a), min(a), max(a), len(a)))
'
