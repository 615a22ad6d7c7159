#!/usr/bin/env bash
# bench/symbolize.sh - offline symbolization of 1e5 distinct frames.
#
# Generates a C program of F functions with C malloc call sites each
# (default 2000 x 50 = 100,000 distinct return addresses, every one its own
# stack), builds it -O1 -g, records it with --stacks and times
#   sym   `alloctrace flamegraph --by calls` (the pass + every frame resolved
#         with libdw, names, files, inline chains)
#   raw   the same with the program's file moved away (no debug info found:
#         the pass and the folding only)
#   a2l   `addr2line -C -f -i` on the same 100,000 addresses (one process,
#         addresses on stdin), for reference
# sym - raw is what symbolization costs.  Runs interleaved, medians of
# RUNS (default 5), each under `flock /tmp/alloctrace-bench.lock`.
#
# usage: ALLOCTRACE_BIN=build/alloctrace bench/symbolize.sh [RUNS]
set -euo pipefail
BIN=${ALLOCTRACE_BIN:-build/alloctrace}
BIN=$(readlink -f "$BIN")
RUNS=${1:-5}
F=${SYMB_FUNCS:-2000}
C=${SYMB_CALLS:-50}
d=$(mktemp -d /tmp/alloctrace-symb.XXXXXX)
trap 'rm -rf "$d"' EXIT
cd "$d"
python3 - "$F" "$C" <<'EOF'
import sys
n, k = int(sys.argv[1]), int(sys.argv[2])
with open("gen.c", "w") as f:
    f.write("#include <stdlib.h>\nvoid *volatile sink;\n")
    for i in range(n):
        f.write("__attribute__((noinline)) void f%d(void) {\n" % i)
        for j in range(k):
            f.write("  sink = malloc(%d); free(sink);\n" % (j + 1))
        f.write("}\n")
    f.write("int main(void) {\n")
    for i in range(n):
        f.write("  f%d();\n" % i)
    f.write("  return 0;\n}\n")
EOF
echo "compiling $F functions x $C call sites (-O1 -g)..." >&2
gcc -O1 -g -o gen gen.c
"$BIN" record --stacks -o tr -- ./gen > /dev/null 2>&1
trace=$(ls tr/*.atr)
# the return addresses of the program's own frames, for addr2line
"$BIN" report --json --top 0 "$trace" | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
seen = set()
for s in p["top"]:
    for f in s["frames"]:
        if f["module"] and f["module"].endswith("/gen"):
            seen.add(int(f["offset"], 16) - 1)
print("\n".join(hex(a) for a in sorted(seen)))' > addrs.txt
naddr=$(wc -l < addrs.txt)
nms() { local t0 t1; t0=$(date +%s%N); "$@" > /dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
sym=() raw=() a2l=()
for ((i = 0; i < RUNS; i++)); do
  sym+=("$(flock /tmp/alloctrace-bench.lock bash -c "$(declare -f nms); nms '$BIN' flamegraph --by calls '$trace'")")
  mv gen gen.away
  raw+=("$(flock /tmp/alloctrace-bench.lock bash -c "$(declare -f nms); nms '$BIN' flamegraph --by calls '$trace'")")
  mv gen.away gen
  a2l+=("$(flock /tmp/alloctrace-bench.lock bash -c "$(declare -f nms); nms addr2line -C -f -i -e gen < addrs.txt")")
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%d ms (min %d, max %d)", a[int((NR+1)/2)], a[1], a[NR]}'; }
echo "distinct addresses in the program: $naddr (stacks: $(wc -l < <("$BIN" flamegraph --by calls "$trace")))"
echo "sym  (flamegraph, symbolized): $(med "${sym[@]}")"
echo "raw  (flamegraph, no symbols): $(med "${raw[@]}")"
echo "a2l  (addr2line -C -f -i):     $(med "${a2l[@]}")"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
