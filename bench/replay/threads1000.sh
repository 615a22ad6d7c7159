#!/usr/bin/env bash
# 1000 threads: tests/progs/waves 1 1000 20 (all alive at once) and
# thread_waves 1000 16 2000 (at most 17 alive), program vs replay, 3 runs.
#   bench/replay/threads1000.sh BUILD_DIR
set -u
B=$(cd "${1:?build dir}" && pwd)
W=$(mktemp -d /tmp/k1000.XXXXXX)
gcc -O2 -pthread -o $W/tw "$(dirname "$0")/thread_waves.c"
$B/alloctrace record -o $W/a -- $B/tests/progs/waves 1 1000 20 >/dev/null 2>&1
$B/alloctrace convert --no-progress $W/a -o $W/a.wl 2>&1 | tail -2
$B/alloctrace record -o $W/b -- $W/tw 1000 16 2000 >/dev/null 2>&1
$B/alloctrace convert --no-progress $W/b -o $W/b.wl 2>&1 | tail -2
uptime
for r in 1 2 3; do
  echo "== waves 1 1000 20 (1000 threads alive at once)"
  flock /tmp/alloctrace-bench.lock /usr/bin/time -f "program %e s %M KB" $B/tests/progs/waves 1 1000 20
  flock /tmp/alloctrace-bench.lock /usr/bin/time -f "replay %e s %M KB" $B/alloctrace replay $W/a.wl --timing off 2>&1 | grep -E "replay |threads:|thread starts|own memory|wall time"
  echo "== thread_waves 1000 16 2000"
  flock /tmp/alloctrace-bench.lock /usr/bin/time -f "program %e s %M KB" $W/tw 1000 16 2000
  flock /tmp/alloctrace-bench.lock /usr/bin/time -f "replay %e s %M KB" $B/alloctrace replay $W/b.wl --timing off 2>&1 | grep -E "replay |threads:|thread starts|own memory|wall time"
done
rm -rf $W
