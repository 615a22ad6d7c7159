#!/usr/bin/env bash
# Thread lifetimes in the replay (issue 19): a program whose threads come
# and go (bench/replay/thread_waves.c) against its replay, interleaved.
#   bench/replay/threads.sh BUILD_DIR [TOTAL PAR ITERS [RUNS]]
# Prints, per run: the program's wall time and Max RSS, the replay's
# (glibc, --timing off) wall time, Max RSS and its own buffers, and the
# wall time of a replay without think time.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
TOTAL=${2:-200} PAR=${3:-8} ITERS=${4:-10000} RUNS=${5:-5}
W=$(mktemp -d /tmp/threads-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
gcc -O2 -pthread -o "$W/thread_waves" "$(dirname "$0")/thread_waves.c"
"$B/alloctrace" record -o "$W/tr" -- "$W/thread_waves" "$TOTAL" "$PAR" "$ITERS" >/dev/null
"$B/alloctrace" convert --no-progress "$W/tr" -o "$W/wl" 2>&1 | sed 's/^/# /'
uptime | sed 's/^/# /'
echo "run program_s program_maxrss_kb replay_s replay_maxrss_kb decoder_kb state_kb slots_kb threads max_live starts_as_traced think_off_s"
for r in $(seq "$RUNS"); do
  p=$(flock /tmp/alloctrace-bench.lock /usr/bin/time -f "%e %M" "$W/thread_waves" "$TOTAL" "$PAR" "$ITERS" 2>&1 >/dev/null | tail -1)
  j=$(flock /tmp/alloctrace-bench.lock "$B/alloctrace" replay "$W/wl" --timing off --json 2>/dev/null)
  k=$(flock /tmp/alloctrace-bench.lock "$B/alloctrace" replay "$W/wl" --timing off --think off --json 2>/dev/null)
  g() { echo "$j" | grep -o "\"$1\": [0-9]*" | grep -o '[0-9]*$'; }
  echo "$r $p $(awk -v u="$(g wall_us)" 'BEGIN{printf "%.2f", u/1e6}') $(g max_rss_kb)" \
    "$(( $(g decoder_peak_bytes) / 1024 )) $(( $(g thread_state_peak_bytes) / 1024 ))" \
    "$(( $(g slot_table_bytes) / 1024 )) $(g threads_created)" \
    "$(g max_live_threads) $(( $(g thread_starts_checked) - $(g thread_starts_unlike_trace) ))/$(g thread_starts_checked)" \
    "$(echo "$k" | grep -o '"wall_us": [0-9]*' | awk '{printf "%.2f", $2/1e6}')"
done
