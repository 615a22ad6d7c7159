#!/usr/bin/env bash
# handoff.sh - record a multi-threaded program N times and count the order
# inversions in its traces: convert's anomalies (unknown frees, double
# frees, allocations of a live address, reallocs of unknown blocks).  A
# correct program traced with correctly ordered stamps has none
# (docs/TRACE_FORMAT.md "Order"); bench/RESULTS.md "Cross-thread stamp
# order" has the measurements.
#
#   bench/handoff.sh BUILD N [PROGRAM ARGS...]
#
# BUILD holds alloctrace (and liballoctrace.so, unless ALLOCTRACE_LIB names
# another one); the default program is bench/handoff.c, built here, with
# `2 1 1000000` (2 threads, 1 slot, 4 M calls).  RECORD_OPTS: options for
# `alloctrace record` (e.g. --timing).  Prints one line per run and the
# totals (handoffs: blocks that changed threads, as bench/handoff.c
# prints them; 0 for other programs).  Run it under `nice -n 19` on a
# shared machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD N [PROGRAM ARGS...]" >&2
	exit 2
fi
at=$(cd "$1" && pwd)/alloctrace
n=$2
shift 2
tmp=$(mktemp -d /tmp/handoff.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 0 ]; then
	"${CC:-gcc}" -O2 -pthread -o "$tmp/handoff" "$here/handoff.c"
	set -- "$tmp/handoff" 2 1 1000000
fi
export ALLOCTRACE_NO_PROGRESS=1
tot_runs=0 tot_bad=0 tot_anom=0 tot_calls=0 tot_hand=0
for ((i = 1; i <= n; i++)); do
	rm -rf "$tmp/t" "$tmp/wl"
	# shellcheck disable=SC2086 # RECORD_OPTS: several options
	"$at" record ${RECORD_OPTS:-} -o "$tmp/t" -- "$@" >"$tmp/rec.out" 2>"$tmp/rec.err" || {
		cat "$tmp/rec.err" >&2
		exit 1
	}
	calls=$("$at" info --json "$tmp/t" |
		python3 -c 'import json,sys; print(sum(p["total_calls"] for p in json.load(sys.stdin)["processes"]))')
	line=$("$at" convert "$tmp/t" -o "$tmp/wl" 2>&1 | grep 'anomalies:' || true)
	# "convert: anomalies: U unknown frees, D double frees, A allocations
	#  of a live address, R reallocs of unknown blocks; L lost records"
	read -r u d a r <<<"$(echo "${line:-x 0 0 0 0}" |
		sed -E 's/[^0-9 ]//g; s/ +/ /g; s/^ //' | cut -d' ' -f1-4)"
	[ -n "$line" ] || u=0 d=0 a=0 r=0
	anom=$((u + d + a + r))
	# handoff prints how many blocks changed threads
	h=$(sed -n 's/^handoffs=\([0-9]*\)$/\1/p' "$tmp/rec.out")
	h=${h:-0}
	echo "run $i: $calls calls, $h handoffs; unknown frees $u, double frees $d, allocations of a live address $a, reallocs of unknown blocks $r"
	tot_hand=$((tot_hand + h))
	tot_runs=$((tot_runs + 1))
	tot_calls=$((tot_calls + calls))
	tot_anom=$((tot_anom + anom))
	[ "$anom" -eq 0 ] || tot_bad=$((tot_bad + 1))
done
echo "total: $tot_runs runs, $tot_calls calls, $tot_hand handoffs, $tot_anom anomalies, $tot_bad runs with anomalies"
