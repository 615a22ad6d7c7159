#!/bin/bash
# record_ab.sh RUNS 'RECORD_CMD...' ['RECORD_CMD...' ...] -- PROG ARGS
#
# Worker CPU ns per call of a bench program (mallocbench, mixedbench,
# xfreebench: they print worker_cpu_ns= and calls=) untraced and under
# each RECORD_CMD (e.g. "build-rel/alloctrace record --no-drain"),
# interleaved, RUNS rounds.  One line per run: ns/call, the command, and
# (ALLOCTRACE_DRAIN_STATS, branch drain) the blocks record copied and those the threads
# copied.  Used for bench/RESULTS.md, "Copying full blocks on another
# core".  PAUSE=S sleeps S seconds before every run: on the benchmark VM
# memory left free for a few seconds goes back to the host, and a trace
# written into it costs more than one written into memory just freed by
# the last run (bench/RESULTS.md, "Write-behind"); every other round runs
# in reverse order.
set -u
R=$1; shift
cmds=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do cmds+=("$1"); shift; done
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
all=(none "${cmds[@]}")
for i in $(seq "$R"); do
  order=("${all[@]}")
  if [ $((i % 2)) -eq 0 ]; then
    order=()
    for ((k = ${#all[@]} - 1; k >= 0; k--)); do order+=("${all[k]}"); done
  fi
  for v in "${order[@]}"; do
    rm -rf "$tmp/t"
    sleep "${PAUSE:-0}"
    if [ "$v" = none ]; then
      out=$("$@" 2>&1)
    else
      # shellcheck disable=SC2086
      out=$(ALLOCTRACE_DRAIN_STATS=1 $v -o "$tmp/t" -- "$@" 2>&1)
    fi
    ns=$(echo "$out" | sed -n 's/worker_cpu_ns=//p' | awk '{s+=$1} END{print s}')
    calls=$(echo "$out" | sed -n 's/^calls=//p' | head -1)
    dr=$(echo "$out" | sed -n 's/.*blocks handed over, \([0-9]*\) copied.* \([0-9]*\) copied by their threads/\1 \2/p')
    echo "$(awk -v a="$ns" -v b="$calls" 'BEGIN{printf "%.2f", a/b}') $v $dr"
  done
done
