#!/bin/sh
# convert throughput (issue 12 item 5: >= 30 M records/s at 1e4-1e6 live
# blocks) on one and two threads: bench/replay/liveset.c under `record` at
# 1e4 and 1e6 live blocks, xfreebench (8 threads, cross-thread frees),
# python3 (PYTHONMALLOC=malloc, JSON) and, if TRACES names it (mt1000000),
# liveset.c with 1e6 live blocks on two threads.  Each argument is a command that
# converts, e.g. "B/alloctrace" or "B/alloctrace --threads 1"; RUNS
# interleaved runs of each; prints M records per wall second and per CPU
# second (user+sys, from wait4 to the microsecond), median (min-max), max RSS, and whether every output is
# the same workload byte for byte as the first command's.
#   bench/replay/convspeed.sh "OLD/alloctrace" "NEW/alloctrace --threads 1" \
#       "NEW/alloctrace --threads 2"
# WORK (default /tmp/rpconvspeed), RUNS (5), TRACES ("t10000 t1000000 xfree
# py"), STEPS (liveset steps, 1000000), XFREE (blocks per producer, 250000),
# PYN (JSON items, 100000); REC: the alloctrace that records (default: the
# first command's); PAUSE (seconds of idle before each timed run, default 0; on
# this VM memory left idle a few seconds goes back to the host, and a run
# after a pause pays for fresh pages again: bench/replay/RESULTS.md, "The
# pipe's depth").  The timing runs hold /tmp/alloctrace-bench.lock.
# CALLGRIND=1: then one `valgrind --tool=callgrind --separate-threads=yes`
# run per command and trace, outside the lock: instructions per record in
# all and on the busiest thread (with two threads the busier one bounds the
# rate): repeatable on a noisy machine.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 'ALLOCTRACE [ARGS]'..." >&2; exit 2; }
W=${WORK:-/tmp/rpconvspeed}
RUNS=${RUNS:-5}
TRACES=${TRACES:-"t10000 t1000000 xfree py"}
SRC=$(cd "$(dirname "$0")/.." && pwd)
REC=${REC:-${1%% *}}
mkdir -p "$W"
cd "$W"
for t in $TRACES; do
	[ -d "$t" ] && continue
	case $t in
	t*)
		gcc -O2 -pthread -o liveset "$SRC/replay/liveset.c"
		"$REC" record -o "$t" -- ./liveset "${t#t}" "${STEPS:-1000000}" >/dev/null
		;;
	mt*)
		gcc -O2 -pthread -o liveset "$SRC/replay/liveset.c"
		"$REC" record -o "$t" -- ./liveset "${t#mt}" "${STEPS:-1000000}" 2 >/dev/null
		;;
	xfree)
		gcc -O2 -pthread -o xfreebench "$SRC/xfreebench.c"
		"$REC" record -o xfree -- ./xfreebench 4 "${XFREE:-250000}" >/dev/null
		;;
	py)
		python3 "$SRC/bench_util.py" pyjson "${PYN:-100000}" >pyjson.py
		PYTHONMALLOC=malloc "$REC" record -o py -- /usr/bin/python3 pyjson.py >/dev/null
		;;
	esac
done
key() { echo "$1" | md5sum | cut -c1-8; }
# runtime OUT CMD...: CMD's wall, user and system seconds into OUT, to the
# microsecond (bench_util.py runtime; max RSS from one /usr/bin/time run)
runtime() {
	python3 "$SRC/bench_util.py" runtime "$@"
}
# "BIN ARGS": BIN convert TRACE ARGS
bin_of() { echo "$1" | cut -d' ' -f1; }
args_of() { echo "$1" | cut -s -d' ' -f2-; }
# records of the busiest process (the one convert takes)
recs_of() {
	"$REC" info --json "$1" | python3 -c 'import json,sys; print(max(p["records"] for p in json.load(sys.stdin)["processes"]))'
}
exec 9>/tmp/alloctrace-bench.lock
flock 9
uptime
for t in $TRACES; do
	recs=$(recs_of "$t")
	for b in "$@"; do : >"$W/conv.$t.$(key "$b")"; done
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
			[ "${PAUSE:-0}" = 0 ] || sleep "$PAUSE"
			# shellcheck disable=SC2086
			runtime "$W/time" \
				"$(bin_of "$b")" convert "$t" $(args_of "$b") -o "$W/out.$(key "$b").wl" \
				--no-progress --quiet
			cat "$W/time" >>"$W/conv.$t.$(key "$b")"
		done
		i=$((i + 1))
	done
	first=""
	for b in "$@"; do
		# shellcheck disable=SC2086
		rss=$(/usr/bin/time -f "%M" "$(bin_of "$b")" convert "$t" $(args_of "$b") \
			-o "$W/rss.wl" --no-progress --quiet 2>&1 >/dev/null | tail -1)
		out="$W/out.$(key "$b").wl"
		[ -n "$first" ] || first=$out
		same=same
		cmp -s "$first" "$out" || same=DIFFERENT
		python3 - "$b" "$t" "$recs" "$W/conv.$t.$(key "$b")" "$same" "$rss" <<'PY'
import statistics, sys
b, t, recs, path, same, rss = sys.argv[1:7]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
cpu = sorted(int(recs) / max(r[1] + r[2], 1e-6) / 1e6 for r in rows)
wall = sorted(int(recs) / max(r[0], 1e-6) / 1e6 for r in rows)
print("convert %-8s %-40s %9d rec: wall %5.1f M/s (%.1f-%.1f), CPU %5.1f M/s (%.1f-%.1f), max RSS %s KB, %s, %d runs" %
      (t, b, int(recs), statistics.median(wall), wall[0], wall[-1], statistics.median(cpu), cpu[0], cpu[-1],
       rss, same, len(rows)))
PY
	done
done
uptime
flock -u 9
[ "${CALLGRIND:-0}" = 1 ] || exit 0
for t in $TRACES; do
	recs=$(recs_of "$t")
	for b in "$@"; do
		rm -f "$W"/cg.out*
		# shellcheck disable=SC2086
		valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$W/cg.out" \
			"$(bin_of "$b")" convert "$t" $(args_of "$b") -o /dev/null --no-progress --quiet \
			>/dev/null 2>&1
		python3 - "$b" "$t" "$recs" "$W"/cg.out* <<'PY'
import sys
b, t, recs = sys.argv[1], sys.argv[2], int(sys.argv[3])
per = []
for f in sys.argv[4:]:
    for line in open(f):
        if line.startswith("totals:"):
            per.append(int(line.split()[1]))
print("convert %-8s %-40s callgrind %5.0f instructions/record, busiest thread %5.0f (threads: %s)" %
      (t, b, sum(per) / recs, max(per) / recs, " ".join("%.0f" % (x / recs) for x in per)))
PY
	done
done
