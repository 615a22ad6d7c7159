#!/usr/bin/env bash
# How long a WAIT spins before it sleeps (replay --spin), on a workload
# with many cross-thread waits: tests/progs/threads (a producer/consumer
# pair freeing each other's blocks), interleaved, medians.
#   bench/replay/spin.sh BUILD_DIR [RUNS]
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
RUNS=${2:-5}
W=$(mktemp -d /tmp/spin-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$B/alloctrace" record -o "$W/tr" -- "$B/tests/progs/threads" 2 >/dev/null
"$B/alloctrace" convert --no-progress -q "$W/tr" -o "$W/wl"
uptime | sed 's/^/# /'
echo "spin wall_ms thread_cpu_ms waits sleeps (one line per run)"
for r in $(seq "$RUNS"); do
  for s in 0 50 200 1000 5000 20000; do
    j=$(flock /tmp/alloctrace-bench.lock "$B/alloctrace" replay "$W/wl" --timing off --think off --spin "$s" --json 2>/dev/null)
    g() { echo "$j" | grep -o "\"$1\": [0-9]*" | grep -o '[0-9]*$'; }
    echo "$s $(( $(g wall_us) / 1000 )) $(( $(g thread_cpu_us) / 1000 )) $(g waits) $(g wait_sleeps)"
  done
done
