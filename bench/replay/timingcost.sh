#!/bin/sh
# What replay's per-call timing costs the wall time (the predicted run time
# of compare's verdict): each workload replayed under glibc with --timing
# serial, sample and off, interleaved, RUNS rounds; prints per mode the
# median (min-max) wall time, its ratio to off's median, and the average
# malloc and free times the replay reports (sample: of its timed calls).
#   bench/replay/timingcost.sh BUILD WORKLOAD...
# RUNS (default 5).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILD WORKLOAD..." >&2; exit 2; }
B=$1
shift
RUNS=${RUNS:-5}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for r in $(seq "$RUNS"); do
	for wl in "$@"; do
		for m in serial sample off; do
			"$B/alloctrace" replay --timing "$m" --kv "$wl" 2>/dev/null |
				awk -v wl="$(basename "$wl")" -v m="$m" '
				$1 == "wall_us" { w = $2 }
				$1 == "avg_malloc" { am = $2 }
				$1 == "avg_free" { af = $2 }
				END { print wl, m, w, am, af }' >>"$OUT"
		done
	done
done
python3 - "$OUT" <<'EOF'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for wl, m, w, am, af in rows:
    by.setdefault((wl, m), []).append((int(w), int(am), int(af)))
print("%-22s %-7s %26s %8s %8s %8s" % ("workload", "timing", "wall ms, median (min-max)", "vs off", "malloc", "free"))
for wl in dict.fromkeys(r[0] for r in rows):
    off = st.median(x[0] for x in by[(wl, "off")])
    for m in ("serial", "sample", "off"):
        v = by[(wl, m)]
        w = [x[0] for x in v]
        print("%-22s %-7s %26s %7.2fx %8d %8d" % (
            wl, m, "%.0f (%.0f-%.0f)" % (st.median(w) / 1e3, min(w) / 1e3, max(w) / 1e3),
            st.median(w) / off, st.median(x[1] for x in v), st.median(x[2] for x in v)))
EOF
