#!/bin/sh
# The trace reader alone (bench/readbench.c: atr_iter_next_calls, no live
# set) and `alloctrace info`, before and after: M records per CPU second
# (user+sys: the machine is shared), median (min-max) of RUNS interleaved
# runs per build, and the checksum of every compact record (must be equal).
#   bench/read_speed.sh BUILD_BEFORE BUILD_AFTER TRACE...
# BUILD_*: CMake build directories (their src/libatr_format.a and
# alloctrace); TRACE: a trace directory or .atr file.  RUNS (5), WORK
# (/tmp/atreadspeed).  Timing runs hold /tmp/alloctrace-bench.lock.
# CALLGRIND=1: also instructions per record of one readbench and one info
# run per build and trace (repeatable on a noisy machine).
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BUILD_BEFORE BUILD_AFTER TRACE..." >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=${WORK:-/tmp/atreadspeed}
RUNS=${RUNS:-5}
mkdir -p "$W"
B1=$(cd "$1" && pwd)
B2=$(cd "$2" && pwd)
shift 2
for b in "$B1" "$B2"; do
	tag=$(echo "$b" | md5sum | cut -c1-8)
	${CC:-cc} -O2 -I"$SRC/src/format" -I"$SRC/src/util" -o "$W/readbench.$tag" \
		"$SRC/bench/readbench.c" "$b/src/libatr_format.a" "$b/src/libatr_util.a" -lzstd -lm
done
exec 9>/tmp/alloctrace-bench.lock
flock 9
uptime
for t in "$@"; do
	for b in "$B1" "$B2"; do
		tag=$(echo "$b" | md5sum | cut -c1-8)
		: >"$W/rb.$tag"
		: >"$W/info.$tag"
		"$W/readbench.$tag" calls --hash "$t"/*.atr | sed "s|^|$b: |"
	done
	i=0
	while [ $i -lt "$RUNS" ]; do
		for b in "$B1" "$B2"; do
			tag=$(echo "$b" | md5sum | cut -c1-8)
			"$W/readbench.$tag" calls --prefetch "$t"/*.atr >>"$W/rb.$tag"
			/usr/bin/time -f "%U %S" -o "$W/time" env ALLOCTRACE_NO_PROGRESS=1 \
				"$b/alloctrace" info "$t" >/dev/null
			cat "$W/time" >>"$W/info.$tag"
		done
		i=$((i + 1))
	done
	for b in "$B1" "$B2"; do
		tag=$(echo "$b" | md5sum | cut -c1-8)
		python3 - "$b" "$t" "$W/rb.$tag" "$W/info.$tag" <<'PY'
import statistics, sys
b, t, rb, info = sys.argv[1:5]
rows = [l.split() for l in open(rb) if l.strip()]
recs = int(rows[0][1])
r = sorted(recs / max(float(x[-1]), 0.005) / 1e6 for x in rows)
i = sorted(recs / max(sum(map(float, l.split())), 0.005) / 1e6 for l in open(info) if l.strip())
print("%s %s: %d records; reader alone %.1f M rec/CPU s (%.1f-%.1f); info %.1f (%.1f-%.1f); %d runs"
      % (t, b, recs, statistics.median(r), r[0], r[-1], statistics.median(i), i[0], i[-1], len(r)))
PY
	done
done
flock -u 9
[ "${CALLGRIND:-0}" = 1 ] || exit 0
for t in "$@"; do
	for b in "$B1" "$B2"; do
		tag=$(echo "$b" | md5sum | cut -c1-8)
		recs=$("$W/readbench.$tag" calls "$t"/*.atr | awk '{print $2}')
		valgrind --tool=callgrind --callgrind-out-file="$W/cg.rb" "$W/readbench.$tag" calls --prefetch "$t"/*.atr >/dev/null 2>&1
		ALLOCTRACE_NO_PROGRESS=1 valgrind --tool=callgrind --callgrind-out-file="$W/cg.info" "$b/alloctrace" info "$t" >/dev/null 2>&1
		for k in rb info; do
			ir=$(callgrind_annotate --inclusive=yes "$W/cg.$k" 2>/dev/null | awk '/:atr_iter_next_calls /{gsub(",","",$1); print $1; exit}')
			tot=$(callgrind_annotate "$W/cg.$k" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1; exit}')
			echo "$t $b $k: $(python3 -c "print('%.1f Ir/record in all, %.1f in atr_iter_next_calls (zstd and the prefetch hook included)' % ($tot / $recs, $ir / $recs))")"
		done
	done
done
