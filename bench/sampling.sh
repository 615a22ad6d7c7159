#!/bin/bash
# bench/sampling.sh - the figures of issue 13 (record --sample) for
# bench/RESULTS.md, "Sampling":
#   1. wall time of python3 (PYTHONMALLOC=malloc, a json loop) and of a C++
#      compile (g++ -O2 -c of a generated file using the standard library),
#      untraced vs `record --sample $RATE --stacks`, runs interleaved,
#      median and min-max of $RUNS;
#   2. CPU time per call of mallocbench (1 thread, malloc-bound) untraced,
#      with the library preloaded but paused (the cost of interposing at
#      all), and sampled without stacks: the added ns per unsampled call;
#   3. trace bytes of a steady-state sqlite3 session (one process running
#      an insert/update/delete loop fed on stdin) under --sample $RATE
#      --stacks, measured at two moments and extrapolated to one hour.
# Every timing runs under `flock /tmp/alloctrace-bench.lock`.
#
# usage: bench/sampling.sh BUILD_DIR   (env: RUNS=7 RATE=524288 SQL_SECS=120)
set -euo pipefail
B=$(cd "${1:?usage: sampling.sh BUILD_DIR}" && pwd)
RUNS=${RUNS:-7}
RATE=${RATE:-524288}
SQL_SECS=${SQL_SECS:-120}
AT=$B/alloctrace
LIB=$B/liballoctrace.so
W=$(mktemp -d /tmp/atr-smpbench.XXXXXX)
trap 'rm -rf "$W"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
LOCK=/tmp/alloctrace-bench.lock

now() { date +%s.%N; }
# secs CMD...: wall seconds of one run
secs() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
# stats FILE: "median (min-max)" of the numbers in FILE
stats() { sort -g "$1" | awk '{v[NR]=$1} END {printf "%.3f (%.3f-%.3f)", v[int((NR+1)/2)], v[1], v[NR]}'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(uptime)"

# ---- 1. real programs -----------------------------------------------------
PY=/usr/bin/python3
cat >"$W/py.py" <<'EOF'
import json
for _ in range(60000):
    json.dumps({"a": list(range(20)), "b": "x" * 50})
EOF
python3 - "$W/synth.cpp" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("#include <map>\n#include <string>\n#include <vector>\n#include <algorithm>\n#include <sstream>\n")
    for i in range(15):
        f.write("std::string f%d(const std::vector<int> &v) { std::map<std::string, std::vector<int>> m;"
                " std::ostringstream o; for (int x : v) { m[std::to_string(x %% %d)].push_back(x); o << x; }"
                " std::vector<std::pair<std::string, int>> p; for (auto &e : m) p.emplace_back(e.first, e.second.size());"
                " std::sort(p.begin(), p.end()); return o.str() + p.front().first; }\n" % (i, i + 3))
EOF
for prog in py cxx; do
	: >"$W/$prog.plain"
	: >"$W/$prog.smp"
done
export -f now secs
export W AT PY RATE
one_round() {
	secs env PYTHONMALLOC=malloc $PY "$W/py.py" >>"$W/py.plain"
	rm -rf "$W/t"
	secs env PYTHONMALLOC=malloc "$AT" record --no-rss -o "$W/t" --sample $RATE --stacks -- $PY "$W/py.py" >>"$W/py.smp"
	secs g++ -O2 -c "$W/synth.cpp" -o "$W/s.o" >>"$W/cxx.plain"
	rm -rf "$W/t"
	secs "$AT" record --no-rss -o "$W/t" --sample $RATE --stacks -- g++ -O2 -c "$W/synth.cpp" -o "$W/s.o" >>"$W/cxx.smp"
}
export -f one_round
for ((i = 0; i < RUNS; i++)); do
	flock "$LOCK" bash -c one_round
done
rm -rf "$W/t"
PYTHONMALLOC=malloc "$AT" record --no-rss -o "$W/t" -- $PY "$W/py.py" 2>"$W/py.calls" >/dev/null
rm -rf "$W/t"
"$AT" record --no-rss -o "$W/t" -- g++ -O2 -c "$W/synth.cpp" -o "$W/s.o" 2>"$W/cxx.calls" >/dev/null
for prog in py cxx; do
	p=$(sort -g "$W/$prog.plain" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
	s=$(sort -g "$W/$prog.smp" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
	echo "$prog: untraced $(stats "$W/$prog.plain") s, --sample $RATE --stacks $(stats "$W/$prog.smp") s," \
		"overhead of medians $(echo "($s / $p - 1) * 100" | bc -l | xargs printf '%+.1f')%;" \
		"full trace: $(grep -o 'recorded [0-9]* calls in [0-9]* process' "$W/$prog.calls")"
done

# ---- 2. unsampled cost per call -------------------------------------------
gcc -std=gnu11 -O2 -pthread -o "$W/mallocbench" "$HERE/mallocbench.c"
ITERS=20000000
CALLS=$("$W/mallocbench" 1 $ITERS | sed -n 's/^calls=//p')
cpu_ms() { # CPU ms (user+sys) of one mallocbench run with env "$@"
	mkdir -p "$W/d"
	env "$@" /usr/bin/time -f '%U %S' "$W/mallocbench" 1 $ITERS 2>&1 >/dev/null | tail -1 |
		awk '{printf "%.0f\n", ($1 + $2) * 1000}'
}
: >"$W/mb.plain"
: >"$W/mb.paused"
: >"$W/mb.smp"
export -f cpu_ms
export ITERS LIB
mb_round() {
	cpu_ms >>"$W/mb.plain"
	cpu_ms LD_PRELOAD="$LIB" ALLOCTRACE_DIR="$W/d" ALLOCTRACE_START=0 >>"$W/mb.paused"
	cpu_ms LD_PRELOAD="$LIB" ALLOCTRACE_DIR="$W/d" ALLOCTRACE_SAMPLE=$RATE >>"$W/mb.smp"
	rm -f "$W"/d/*
}
export -f mb_round
for ((i = 0; i < RUNS; i++)); do
	flock "$LOCK" bash -c mb_round
done
med() { sort -g "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
mp=$(med "$W/mb.plain")
echo "mallocbench 1 thread, $CALLS calls, CPU ms: untraced $(stats "$W/mb.plain"), preloaded but paused $(stats "$W/mb.paused"), --sample $RATE $(stats "$W/mb.smp")"
echo "  added ns per call (medians): paused $(echo "($(med "$W/mb.paused") - $mp) * 1000000 / $CALLS" | bc -l | xargs printf '%.2f'), sampled $(echo "($(med "$W/mb.smp") - $mp) * 1000000 / $CALLS" | bc -l | xargs printf '%.2f')"

# ---- 3. trace size of a steady-state service --------------------------------
cat >"$W/feed.py" <<'EOF'
import sys, time
end = time.time() + float(sys.argv[1])
print("CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);")
i = 0
while time.time() < end:
    print("BEGIN;")
    for j in range(200):
        i += 1
        print("INSERT INTO t(k, v) VALUES ('key%d', randomblob(%d));" % (i, 50 + i % 900))
    print("UPDATE t SET v = randomblob(300) WHERE id %% 7 = %d;" % (i % 7))
    print("DELETE FROM t WHERE id < %d;" % (i - 5000))
    print("SELECT count(*), sum(length(v)) FROM t GROUP BY substr(k, 1, 4);")
    print("COMMIT;")
    sys.stdout.flush()
    time.sleep(0.01)
EOF
rm -rf "$W/sql"
python3 "$W/feed.py" "$SQL_SECS" | "$AT" record --no-rss -o "$W/sql" --sample "$RATE" --stacks -- sqlite3 "$W/db.sqlite" >/dev/null 2>"$W/sql.err" &
sleep 20
s1=$(stat -c %s "$W"/sql/*.atr)
t1=$(now)
wait
s2=$(stat -c %s "$W"/sql/*.atr)
t2=$(now)
rate=$(echo "($s2 - $s1) / ($t2 - $t1) * 3600" | bc -l)
echo "sqlite3 steady state, --sample $RATE --stacks: trace $s1 B at 20 s, $s2 B at $(echo "$t2 - $t1 + 20" | bc -l | xargs printf '%.0f') s;" \
	"growth $(echo "($s2 - $s1) / ($t2 - $t1)" | bc -l | xargs printf '%.0f') B/s = $(echo "$rate / 1048576" | bc -l | xargs printf '%.2f') MiB per hour (extrapolated);" \
	"$(grep -o 'recorded [0-9]* calls' "$W/sql.err") sampled records"
"$AT" report "$W/sql" | sed -n 3,6p
