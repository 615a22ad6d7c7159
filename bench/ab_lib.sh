#!/usr/bin/env bash
# A/B of two builds of liballoctrace.so on mallocbench's malloc fast path:
# runs interleaved (A, B, A, B, ...), prints each library's median
# wall time and ns per call with min-max.  Hold the bench lock
# (flock /tmp/alloctrace-bench.lock bench/ab_lib.sh ...) on a shared machine.
#
#   usage: bench/ab_lib.sh LIB_A LIB_B [RUNS] [THREADS] [ITERS_PER_THREAD]
#
# Recording settings are the default ones (record with no options); the
# traces go to a temporary directory that is removed afterwards.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
A=$(realpath "$1")
B=$(realpath "$2")
RUNS=${3:-9}
THREADS=${4:-1}
ITERS=${5:-20000000}
CC=${CC:-gcc}
unset LD_PRELOAD ALLOCTRACE_FILE ALLOCTRACE_TIMING ALLOCTRACE_STACKS || true

WORK=$(mktemp -d /tmp/alloctrace-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$CC" -std=gnu11 -O2 -pthread -o "$WORK/mallocbench" "$BENCH_DIR/mallocbench.c"

one() { # LIB -> "seconds calls"
    local d="$WORK/t"
    rm -rf "$d" && mkdir "$d"
    local t0 t1 out
    t0=$(date +%s%N)
    out=$(LD_PRELOAD="$1" ALLOCTRACE_DIR="$d" ALLOCTRACE_QUIET=1 "$WORK/mallocbench" "$THREADS" "$ITERS")
    t1=$(date +%s%N)
    echo "$(( t1 - t0 )) $(sed -n 's/^calls=//p' <<<"$out")"
}

: >"$WORK/a"
: >"$WORK/b"
for ((i = 0; i < RUNS; i++)); do
    one "$A" >>"$WORK/a"
    one "$B" >>"$WORK/b"
done

stats() { # FILE LABEL
    sort -n "$1" | awk -v label="$2" '
        { ns[NR] = $1; calls = $2 }
        END {
            n = NR; med = (n % 2) ? ns[(n + 1) / 2] : (ns[n / 2] + ns[n / 2 + 1]) / 2
            printf "%s: median %.3f s (min %.3f, max %.3f), %.2f ns/call over %d calls, %d runs\n",
                label, med / 1e9, ns[1] / 1e9, ns[n] / 1e9, med / calls, calls, n
        }'
}
echo "mallocbench $THREADS thread(s) x $ITERS iterations, runs interleaved; $(uptime | sed 's/.*load/load/')"
stats "$WORK/a" "A $A"
stats "$WORK/b" "B $B"
