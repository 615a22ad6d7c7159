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
/usr/bin/time -v $B/alloctrace convert big -o big.wl --no-progress 2>&1 | grep -E "convert:|Maximum resident|Elapsed"
ls -l big.wl
$B/alloctrace replay big.wl --allocator none --json | grep -E '"wall_us"|"ops"|"max_rss_kb"'
$B/alloctrace replay big.wl --json | grep -E '"wall_us"|"ops"|"max_rss_kb"|avg_cycles|"count"'
time /tmp/mallocbench 2 26000000
rm -rf big big.wl
