#!/usr/bin/env bash
# handoff.sh - record a multi-threaded program N times and count the order
# inversions in its traces: convert's anomalies (unknown frees, double
# frees, allocations of a live address, reallocs of unknown blocks) and the
# frees convert put after the allocation they were stamped ahead of, and
# the anomalies of the same trace in stamp order (`convert --no-reorder`).  A
# correct program traced with correctly ordered stamps has none
# (docs/TRACE_FORMAT.md "Order"); bench/RESULTS.md "Cross-thread stamp
# order" has the measurements.
#
#   bench/handoff.sh BUILD N [PROGRAM ARGS...]
#
# BUILD holds alloctrace (and liballoctrace.so, unless ALLOCTRACE_LIB names
# another one); the default program is bench/handoff.c, built here, with
# `2 1 1000000` (2 threads, 1 slot, 4 M calls).  RECORD_OPTS: options for
# `alloctrace record` (e.g. --timing); CONVERT_OPTS: for `convert` (e.g.
# --no-reorder: the anomalies as the stamps order them).  Prints one line per run and the
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
tot_runs=0 tot_bad=0 tot_anom=0 tot_calls=0 tot_hand=0 tot_ro=0 tot_so=0
for ((i = 1; i <= n; i++)); do
	rm -rf "$tmp/t" "$tmp/wl"
	# shellcheck disable=SC2086 # RECORD_OPTS: several options
	"$at" record ${RECORD_OPTS:-} -o "$tmp/t" -- "$@" >"$tmp/rec.out" 2>"$tmp/rec.err" || {
		cat "$tmp/rec.err" >&2
		exit 1
	}
	calls=$("$at" info --json "$tmp/t" |
		python3 -c 'import json,sys; print(sum(p["total_calls"] for p in json.load(sys.stdin)["processes"]))')
	conv=$("$at" convert ${CONVERT_OPTS:-} "$tmp/t" -o "$tmp/wl" 2>&1)
	line=$(echo "$conv" | grep 'anomalies:' || true)
	# "convert: N frees stamped ahead of another thread's allocation ..."
	ro=$(echo "$conv" | sed -n 's/^convert: \([0-9,]*\) frees stamped ahead.*/\1/p' | tr -d ,)
	ro=${ro:-0}
	# "convert: anomalies: U unknown frees, D double frees, A allocations
	#  of a live address, R reallocs of unknown blocks; L lost records"
	read -r u d a r <<<"$(echo "${line:-x 0 0 0 0}" |
		sed -E 's/[^0-9 ]//g; s/ +/ /g; s/^ //' | cut -d' ' -f1-4)"
	[ -n "$line" ] || u=0 d=0 a=0 r=0
	anom=$((u + d + a + r))
	# handoff prints how many blocks changed threads
	h=$(sed -n 's/^handoffs=\([0-9]*\)$/\1/p' "$tmp/rec.out")
	h=${h:-0}
	echo "run $i: $calls calls, $h handoffs; unknown frees $u, double frees $d, allocations of a live address $a, reallocs of unknown blocks $r; reordered $ro"
	tot_ro=$((tot_ro + ro))
	tot_hand=$((tot_hand + h))
	tot_runs=$((tot_runs + 1))
	tot_calls=$((tot_calls + calls))
	tot_anom=$((tot_anom + anom))
	[ "$anom" -eq 0 ] || tot_bad=$((tot_bad + 1))
	# the same trace in stamp order: every inversion an anomaly
	so=$("$at" convert --no-reorder "$tmp/t" -o "$tmp/wl" 2>&1 | grep 'anomalies:' || true)
	so=$(echo "${so:-x 0 0 0 0}" | sed -E 's/[^0-9 ]//g; s/ +/ /g; s/^ //' |
		awk '{print $1 + $2 + $3 + $4}')
	echo "       in stamp order (--no-reorder): $so anomalies"
	tot_so=$((tot_so + so))
done
echo "total: $tot_runs runs, $tot_calls calls, $tot_hand handoffs, $tot_anom anomalies, $tot_bad runs with anomalies, $tot_ro frees reordered; $tot_so anomalies in stamp order"
