#!/bin/sh
# convert's two-thread pipe against how far apart the VM's two vCPUs sit
# right now: each round measures a cache line's round trip between CPUs 0
# and 1 (pingpong.c), then converts TRACE once with each command (the
# order reversed every other round).  Prints M records per wall second,
# median (min-max), apart for rounds where the round trip was under
# FAR_NS (default 250: "near") and over it ("far").
#   bench/replay/pipe_ab.sh "OLD/alloctrace --threads 2" "NEW/alloctrace --threads 2"
# WORK (default /tmp/rpconvspeed: the traces bench/replay/convspeed.sh
# records), TRACE (t10000), ROUNDS (20), PAUSE (seconds between rounds, 2:
# the placement changes from minute to minute).  Holds
# /tmp/alloctrace-bench.lock.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 'ALLOCTRACE [ARGS]'..." >&2; exit 2; }
W=${WORK:-/tmp/rpconvspeed}
T=${TRACE:-t10000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ -d "$W/$T" ] || { echo "$0: no $W/$T: run bench/replay/convspeed.sh first" >&2; exit 2; }
gcc -O2 -pthread -o "$W/pingpong" "$SRC/replay/pingpong.c"
REC=${1%% *}
recs=$("$REC" info --json "$W/$T" | python3 -c 'import json,sys; print(max(p["records"] for p in json.load(sys.stdin)["processes"]))')
exec 9>/tmp/alloctrace-bench.lock
flock 9
uptime
out="$W/pipe_ab.$T.txt"
: >"$out"
i=0
while [ $i -lt "${ROUNDS:-20}" ]; do
	pp=$("$W/pingpong")
	if [ $((i % 2)) -eq 0 ]; then idx=$(seq 1 $#); else idx=$(seq $# -1 1); fi
	for j in $idx; do
		eval "b=\${$j}"
		# shellcheck disable=SC2086
		python3 "$SRC/bench_util.py" runtime "$W/time" $(echo "$b" | cut -d' ' -f1) convert \
			"$W/$T" $(echo "$b" | cut -s -d' ' -f2-) -o "$W/pipe_ab.$T.wl" --no-progress --quiet
		echo "$j $pp $(cut -d' ' -f1 "$W/time")" >>"$out"
	done
	i=$((i + 1))
	sleep "${PAUSE:-2}"
done
uptime
python3 - "$out" "$recs" "${FAR_NS:-250}" "$@" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
recs, far = int(sys.argv[2]), float(sys.argv[3])
cmds = sys.argv[4:]
for label, near in (("near", True), ("far", False)):
    pps = [float(r[1]) for r in rows if (float(r[1]) < far) == near and r[0] == "1"]
    if not pps:
        print(f"{label}: no round")
        continue
    print(f"{label} (round trip {min(pps):.0f}-{max(pps):.0f} ns, {len(pps)} rounds):")
    for j, c in enumerate(cmds, 1):
        r = [recs / float(x[2]) / 1e6 for x in rows if x[0] == str(j) and (float(x[1]) < far) == near]
        print(f"  {c:55s} {statistics.median(r):5.1f} M/s ({min(r):.1f}-{max(r):.1f})")
PY
