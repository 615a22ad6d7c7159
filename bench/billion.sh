#!/usr/bin/env bash
# A billion calls, end to end: record mallocbench (2 threads x ITERS
# iterations, ~3.94 calls per iteration: 984,375,265 calls at the default),
# then info, report, convert and replay the trace.  Every step runs under
# `flock /tmp/alloctrace-bench.lock` and `/usr/bin/time -v`; one line per
# step: wall, user+sys CPU, max RSS, and the size of what it wrote.
#
#   ALLOCTRACE_BIN=build/alloctrace bench/billion.sh [WORKDIR]
#
# WORKDIR (default: a new directory under /tmp) needs ~25 GB free for v1
# traces, ~5 GB for v2; it is deleted at the end unless KEEP=1.  STEPS
# selects steps (default "record info report convert replay"); with
# STEPS="info convert" and KEEP=1 a second run re-reads the same trace.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(realpath -m "${ALLOCTRACE_BIN:-$BENCH_DIR/../build/alloctrace}")
ITERS=${ITERS:-250000000}
STEPS=${STEPS:-"record info report convert replay"}
KEEP=${KEEP:-0}
LOCK=/tmp/alloctrace-bench.lock
WORK=${1:-$(mktemp -d /tmp/alloctrace-billion.XXXXXX)}
mkdir -p "$WORK"
[[ -x $BIN ]] || { echo "no $BIN (set ALLOCTRACE_BIN)" >&2; exit 1; }
cleanup() { [[ $KEEP == 1 ]] || rm -rf "$WORK"; }
trap cleanup EXIT

gcc -std=gnu11 -O2 -pthread -o "$WORK/mallocbench" "$BENCH_DIR/mallocbench.c"

# step NAME OUTPUT -- CMD...: time CMD, print one line
step() {
	local name=$1 out=$2
	shift 3
	echo "[$(date -u +%H:%M:%S)] $name: $* (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	flock "$LOCK" /usr/bin/time -v -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
		{ cat "$WORK/$name.err" >&2; exit 1; }
	local wall user sys rss size=-
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/$name.time")
	user=$(sed -n 's/.*User time (seconds): //p' "$WORK/$name.time")
	sys=$(sed -n 's/.*System time (seconds): //p' "$WORK/$name.time")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/$name.time")
	[[ $out == - ]] || size=$(du -sb "$out" | cut -f1)
	printf '%-8s wall %-9s cpu %7.1f s (user %s, sys %s)  max RSS %8d KiB  output %s B\n' \
		"$name" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" "$user" "$sys" "$rss" "$size"
}

for s in $STEPS; do
	case $s in
	record) step record "$WORK/huge" -- "$BIN" record -o "$WORK/huge" --force -- \
		"$WORK/mallocbench" 2 "$ITERS" ;;
	info) step info - -- "$BIN" info "$WORK/huge" ;;
	report) step report - -- "$BIN" report --top 3 "$WORK/huge" ;;
	convert) step convert "$WORK/huge.wl" -- "$BIN" convert "$WORK/huge" -o "$WORK/huge.wl" \
		--no-progress ;;
	replay) step replay - -- "$BIN" replay "$WORK/huge.wl" --timing off ;;
	*) echo "unknown step $s" >&2; exit 2 ;;
	esac
	case $s in
	record) grep -h "recorded" "$WORK/record.err" | tail -1 ;;
	info) grep -E "calls|lost|peak|size|bytes" "$WORK/info.out" | head -12 ;;
	convert) tail -3 "$WORK/convert.err" "$WORK/convert.out" 2>/dev/null | grep -v '^$' || true ;;
	replay) head -20 "$WORK/replay.out" ;;
	esac
done
