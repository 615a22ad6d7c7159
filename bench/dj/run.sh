#!/bin/sh
# dj/malloc compatibility speed (docs/DJ_COMPAT.md): reading a dj trace
# against reading the same calls as an alloctrace trace, and replaying a dj
# workload (translation included) against the alloctrace workload it came
# from.  Needs ~1.5 GB in $WORK (default /tmp/djbench); deletes it after.
# B: a build directory (default build/); mallocbench built as in
# bench/replay/big.sh.  Every timing run holds the shared bench lock.
set -e
B=${B:-$(cd "$(dirname "$0")/../.." && pwd)/build}
A=$B/alloctrace
L=/tmp/alloctrace-bench.lock
W=${WORK:-/tmp/djbench}
N=${N:-5000000}
mkdir -p $W && cd $W
[ -x /tmp/mallocbench ] || gcc -O2 -pthread -o /tmp/mallocbench "$(dirname "$0")/../mallocbench.c"
rm -rf tr tr.dj tr.wl tr.djwl
$A record -o tr -- /tmp/mallocbench 2 $N >/dev/null
$A export --format dj-trace -o tr.dj tr
$A convert -q tr -o tr.wl
$A export --format dj-wl -o tr.djwl tr.wl
ls -l tr/*.atr tr.dj tr.wl tr.djwl
uptime
for i in 1 2 3; do
	for f in tr tr.dj; do
		printf '%s convert: ' $f
		flock $L /usr/bin/time -f '%e s real %U user %S sys %M KB' $A convert $f -o /dev/null --no-progress 2>&1 |
			grep -E 'records/s|real' | sed -e 's/.*calls, //' | tr '\n' ' '
		echo
	done
	for f in tr.wl tr.djwl; do
		printf '%s replay --allocator none --timing off: ' $f
		flock $L /usr/bin/time -f '%e s real %U user %S sys %M KB' $A replay $f --allocator none --timing off \
			--json 2>&1 | grep -E '"wall_us"|real' | tr -d '\n'
		echo
	done
done
uptime
cd / && rm -rf $W
