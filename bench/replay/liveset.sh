#!/bin/sh
# convert and info throughput on traces with 1e4, 1e5 and 1e6 live blocks
# (issue 12 item 5, issue 9): bench/replay/liveset.c under `record`, then
# RUNS interleaved runs of each binary; prints M records per CPU second
# (user+sys: the machine is shared, wall time measures the load) and per
# wall second, median (min-max).
#   bench/replay/liveset.sh ALLOCTRACE_BEFORE ALLOCTRACE_AFTER...
# WORK (default /tmp/rpliveset), RUNS (5), LIVES ("10000 100000 1000000"),
# STEPS (5000000); REC: the alloctrace that records (default: the first).
# The timing runs hold /tmp/alloctrace-bench.lock, all of them at once.
# CALLGRIND=1: also one `valgrind --tool=callgrind` run per binary, pass and
# trace, after the timing runs and outside the lock (instructions per
# record: repeatable on a noisy machine).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 ALLOCTRACE..." >&2; exit 2; }
W=${WORK:-/tmp/rpliveset}
RUNS=${RUNS:-5}
LIVES=${LIVES:-"10000 100000 1000000"}
STEPS=${STEPS:-5000000}
SRC=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W"
gcc -O2 -o "$W/liveset" "$SRC/liveset.c"
for L in $LIVES; do
	[ -d "$W/t$L" ] || "${REC:-$1}" record -o "$W/t$L" -- "$W/liveset" "$L" "$STEPS" >/dev/null
done
exec 9>/tmp/alloctrace-bench.lock
flock 9
uptime
for L in $LIVES; do
	recs=$("$1" info --json "$W/t$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["records"])')
	for cmd in convert info; do
		for b in "$@"; do : >"$W/$cmd.$L.$(echo "$b" | md5sum | cut -c1-8)"; done
		i=0
		while [ $i -lt "$RUNS" ]; do
			for b in "$@"; do
				out="$W/$cmd.$L.$(echo "$b" | md5sum | cut -c1-8)"
				if [ $cmd = convert ]; then
					/usr/bin/time -f "%e %U %S %M" -o "$W/time" \
						"$b" convert "$W/t$L" -o /dev/null --no-progress --quiet >/dev/null 2>&1
				else
					/usr/bin/time -f "%e %U %S %M" -o "$W/time" \
						"$b" info "$W/t$L" >/dev/null
				fi
				cat "$W/time" >>"$out"
			done
			i=$((i + 1))
		done
		for b in "$@"; do
			out="$W/$cmd.$L.$(echo "$b" | md5sum | cut -c1-8)"
			python3 - "$b" "$cmd" "$L" "$recs" "$out" <<'PY'
import statistics, sys
b, cmd, live, recs, path = sys.argv[1:6]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
cpu = sorted(int(recs) / (r[1] + r[2]) / 1e6 for r in rows)
wall = sorted(int(recs) / r[0] / 1e6 for r in rows)
kb = max(r[3] for r in rows)
print("%-8s live %-8s %s: %5.1f M rec/CPU s (%.1f-%.1f), wall %5.1f (%.1f-%.1f), max RSS %d KB, %d runs" %
      (cmd, live, b, statistics.median(cpu), cpu[0], cpu[-1], statistics.median(wall), wall[0], wall[-1], kb, len(rows)))
PY
		done
	done
done
uptime
flock -u 9
# instruction counts: one run each, outside the lock (valgrind is slow)
[ "${CALLGRIND:-0}" = 1 ] || exit 0
for L in $LIVES; do
	recs=$("$1" info --json "$W/t$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["records"])')
	for cmd in convert info; do
		for b in "$@"; do
			extra=""
			[ $cmd = convert ] && extra="-o /dev/null --no-progress --quiet"
			# shellcheck disable=SC2086
			ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$b" $cmd "$W/t$L" $extra 2>&1 >/dev/null |
				sed -n 's/.*Collected : *\([0-9]*\).*/\1/p')
			python3 -c "print('%-8s live %-8s %s: callgrind %d instructions, %.0f per record' % ('$cmd', '$L', '$b', $ir, $ir / $recs))"
		done
	done
done
