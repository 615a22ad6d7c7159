#!/bin/sh
# Convert throughput and simulator overhead on a 1e8-call mallocbench trace.
# Needs ~2.5 GB of disk in $WORK (default /tmp/rpbench); deletes it after.
# Build mallocbench first: gcc -O2 -pthread -o /tmp/mallocbench bench/mallocbench.c
set -x
B=${B:-$(cd "$(dirname "$0")/../.." && pwd)/build-replay}
mkdir -p ${WORK:-/tmp/rpbench} && cd ${WORK:-/tmp/rpbench}
rm -rf big big.wl
time $B/alloctrace record -o big -- /tmp/mallocbench 2 26000000
du -sh big
for i in 1 2 3; do
	/usr/bin/time -v $B/alloctrace convert big -o big.wl --no-progress 2>&1 |
		grep -E "records/s|Maximum resident|Elapsed|User time|System time"
done
# CPU only (no page cache writes of the 300 MB workload)
$B/alloctrace convert big -o /dev/null --no-progress 2>&1 | grep records/s
ls -l big.wl
# simulator overhead: none = bookkeeping only; thread_cpu_us is immune to
# a busy machine (wall_us is not: see the warning replay prints)
for t in off fast serial; do
	for a in none glibc; do
		echo "timing $t allocator $a"
		$B/alloctrace replay big.wl --allocator $a --timing $t --json |
			grep -E '"wall_us"|"thread_cpu_us"|"ops"|"max_rss_kb"|avg_cycles|"timer_floor'
	done
done
time /tmp/mallocbench 2 26000000
rm -rf big big.wl
