#!/bin/sh
# `alloctrace info` throughput on the v2 traces of bench/format_bench.py
# (issue 9's goal: >= 30 M records per CPU second): python3 JSON
# (PYTHONMALLOC=malloc), cc1plus -O2 on a preprocessed C++ file, xfreebench
# (8 threads, cross-thread frees).  Records them once with REC, then RUNS
# interleaved runs of `info` per binary; prints M records per CPU second
# (user+sys from wait4, to the microsecond: the machine is shared),
# median (min-max), and max RSS.
#   bench/info_speed.sh ALLOCTRACE_BEFORE ALLOCTRACE_AFTER...
# WORK (default /tmp/atinfospeed), RUNS (5), PYN (300000 records of JSON),
# XFREE (1000000 blocks per producer); REC: the alloctrace that records
# (default: the first).  Timing runs hold /tmp/alloctrace-bench.lock.
# CALLGRIND=1: also one `valgrind --tool=callgrind` run per binary and
# trace, after the timing runs and outside the lock (instructions per
# record: repeatable on a noisy machine).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 ALLOCTRACE..." >&2; exit 2; }
W=${WORK:-/tmp/atinfospeed}
RUNS=${RUNS:-5}
SRC=$(cd "$(dirname "$0")" && pwd)
REC=${REC:-$1}
mkdir -p "$W"
cd "$W"
if [ ! -d py ]; then
	python3 "$SRC/bench_util.py" pyjson "${PYN:-300000}" >pyjson.py
	PYTHONMALLOC=malloc "$REC" record -o py -- /usr/bin/python3 pyjson.py >/dev/null
fi
if [ ! -d cc1plus ]; then
	python3 "$SRC/bench_util.py" cxx >t.cpp
	g++ -O2 -E t.cpp -o t.ii
	"$REC" record -o cc1plus -- "$(g++ -print-prog-name=cc1plus)" -quiet -O2 t.ii -o /dev/null
fi
if [ ! -d xfree ]; then
	gcc -O2 -pthread -o xfreebench "$SRC/xfreebench.c"
	"$REC" record -o xfree -- ./xfreebench 4 "${XFREE:-1000000}" >/dev/null
fi
# runtime OUT CMD...: CMD's wall, user and system seconds into OUT, to the
# microsecond (bench_util.py runtime; max RSS from one /usr/bin/time run)
runtime() {
	python3 "$SRC/bench_util.py" runtime "$@"
}
exec 9>/tmp/alloctrace-bench.lock
flock 9
uptime
for t in py cc1plus xfree; do
	recs=$("$1" info --json "$t" | python3 -c 'import json,sys; print(sum(p["records"] for p in json.load(sys.stdin)["processes"]))')
	for b in "$@"; do : >"$W/info.$t.$(echo "$b" | md5sum | cut -c1-8)"; done
	i=0
	while [ $i -lt "$RUNS" ]; do
		# every other round in reverse order: on this VM every other run
		# spends 0.3-0.6 s more in the kernel zeroing fresh pages
		# (clear_page_erms), whichever binary it is, and A B A B order
		# put every slow run on A (bench/RESULTS.md, "The open goals on
		# today's VM")
		if [ $((i % 2)) -eq 0 ]; then idx=$(seq 1 $#); else idx=$(seq $# -1 1); fi
		for j in $idx; do
			eval "b=\${$j}"
			ALLOCTRACE_NO_PROGRESS=1 runtime "$W/time" "$b" info "$t" >/dev/null
			cat "$W/time" >>"$W/info.$t.$(echo "$b" | md5sum | cut -c1-8)"
		done
		i=$((i + 1))
	done
	for b in "$@"; do
		rss=$(/usr/bin/time -f "%M" env ALLOCTRACE_NO_PROGRESS=1 "$b" info "$t" 2>&1 >/dev/null | tail -1)
		python3 - "$b" "$t" "$recs" "$W/info.$t.$(echo "$b" | md5sum | cut -c1-8)" "$rss" <<'PY'
import statistics, sys
b, t, recs, path, rss = sys.argv[1:6]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
cpu = sorted(int(recs) / max(r[1] + r[2], 1e-6) / 1e6 for r in rows)
print("info %-8s %s: %d records, %5.1f M rec/CPU s (%.1f-%.1f), max RSS %s KB, %d runs" %
      (t, b, int(recs), statistics.median(cpu), cpu[0], cpu[-1], rss, len(rows)))
PY
	done
done
uptime
flock -u 9
# instruction counts: one run each, outside the lock (valgrind is slow)
[ "${CALLGRIND:-0}" = 1 ] || exit 0
for t in py cc1plus xfree; do
	recs=$("$1" info --json "$t" | python3 -c 'import json,sys; print(sum(p["records"] for p in json.load(sys.stdin)["processes"]))')
	for b in "$@"; do
		ir=$(ALLOCTRACE_NO_PROGRESS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$b" info "$t" 2>&1 >/dev/null |
			sed -n 's/.*Collected : *\([0-9]*\).*/\1/p')
		python3 -c "print('info %-8s %s: callgrind %d instructions, %.0f per record' % ('$t', '$b', $ir, $ir / $recs))"
	done
done
