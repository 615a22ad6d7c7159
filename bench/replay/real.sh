#!/bin/sh
# Replay vs reality (issue #3): three real programs, each run for real under
# glibc, jemalloc, tcmalloc and mimalloc (LD_PRELOAD), then traced once,
# converted, and replayed under the same four with `alloctrace compare`.
#
#   B=build-dir WORK=/tmp/rpreal RUNS=5 bench/replay/real.sh
#
# Programs (each one process):
#   python  /usr/bin/python3 on a malloc-heavy script, PYTHONMALLOC=malloc
#           (with the default pymalloc, Python makes ~10k malloc calls: its
#           small objects never reach the allocator)
#   cc1     gcc's cc1 -O2 on a preprocessed generated C file (the command
#           line `gcc -### -O2 -c x.i` shows, run directly)
#   sqlite  /usr/bin/sqlite3 :memory: with 150k inserts, indexes, joins,
#           updates, deletes, VACUUM
# Real runs are interleaved (A B C D, A B C D, ...); wall time, user+sys CPU
# time and max RSS come from wait4().  Needs ~3 GB in $WORK; traces are
# deleted after conversion.  Prints a markdown table (also $WORK/real.md).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-$ROOT/build-replay}
AT=$B/alloctrace
WORK=${WORK:-/tmp/rpreal}
RUNS=${RUNS:-5}
PY=/usr/bin/python3 # not the pyenv shim on PATH
LIBDIR=/usr/lib/x86_64-linux-gnu
JE=$LIBDIR/libjemalloc.so.2
TC=$LIBDIR/libtcmalloc_minimal.so.4
MI=$LIBDIR/libmimalloc.so.2.0
CC1=$(gcc -print-prog-name=cc1)
for f in "$AT" $PY $JE $TC $MI "$CC1" /usr/bin/sqlite3; do
	[ -e "$f" ] || { echo "real.sh: missing $f (scripts/setup-deps.sh --bench; build $B)" >&2; exit 1; }
done
mkdir -p "$WORK" && cd "$WORK"

# ---------------------------------------------------------------- inputs
cat >alloc.py <<'EOF'
# malloc-heavy Python: many small objects, strings, dicts, a JSON round trip
import json
N = 60000
data = []
for i in range(N):
    data.append({"id": i, "name": "item%06d" % i, "tags": ["t%d" % ((i * 7 + k) % 1000) for k in range(6)],
                 "score": (i * 2654435761 % 1000003) / 7.0, "parent": i // 3})
s = json.dumps(data)
back = json.loads(s)
groups = {}
for d in back:
    groups.setdefault(d["name"][-2:], []).append(d["id"])
words = {}
for tok in s.split('"'):
    words[tok[:5]] = words.get(tok[:5], 0) + 1
del data
churn = 0
for r in range(15):
    tmp = [str(x) * 3 for x in range(20000)]
    tmp2 = {t: len(t) for t in tmp}
    churn += len(tmp2)
    del tmp, tmp2
back.sort(key=lambda d: (d["score"], d["id"]))
print(len(s), len(groups), len(words), churn, back[0]["id"])
EOF

cat >gen_c.py <<'EOF'
import sys
n = int(sys.argv[1])
print('#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>')
print('struct node { struct node *next; int key; double val; char name[16]; };')
for i in range(n):
    print(f'''
static int helper{i}(const int *a, int n, int k) {{
    int s = {i};
    for (int j = 0; j < n; j++) {{
        if (a[j] % (k + {i % 7 + 1}) == 0) s += a[j] * {i % 13 + 1};
        else if (a[j] > {i}) s -= a[j] >> 1;
        else s ^= a[j] << (j & 3);
    }}
    return s;
}}
struct node *build{i}(int n) {{
    struct node *h = 0;
    for (int j = 0; j < n; j++) {{
        struct node *x = malloc(sizeof *x);
        x->key = j * {i + 3} % 97; x->val = sin(j * 0.{i % 9 + 1}) + {i};
        snprintf(x->name, sizeof x->name, "n{i}_%d", j);
        x->next = h; h = x;
    }}
    return h;
}}
double work{i}(int n) {{
    int a[64]; double acc = 0;
    for (int j = 0; j < 64; j++) a[j] = (j * {2 * i + 1}) ^ n;
    struct node *h = build{i}(n);
    for (struct node *p = h; p; p = p->next) {{
        switch (p->key & 7) {{
        case 0: acc += p->val * helper{i}(a, 64, p->key); break;
        case 1: acc -= strlen(p->name); break;
        case 2: acc += cos(p->val); break;
        case 3: acc *= 1.0001; break;
        default: acc += p->key;
        }}
    }}
    while (h) {{ struct node *x = h->next; free(h); h = x; }}
    return acc + helper{i}(a, 64, n);
}}''')
print('int main(int argc, char **argv) { double s = 0; (void)argv;')
for i in range(n):
    print(f'  s += work{i}(argc + {i % 50});')
print('  printf("%f\\n", s); return 0; }')
EOF
$PY gen_c.py 120 >x.c
gcc -E x.c -o x.i

cat >gen_sql.py <<'EOF'
import sys
n = int(sys.argv[1])
out = ["PRAGMA cache_size=-100000;",
       "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, cat INTEGER, price REAL, descr TEXT);",
       "CREATE TABLE tag(item INTEGER, tag TEXT);", "BEGIN;"]
for i in range(n):
    out.append("INSERT INTO item VALUES(%d,'item%06d',%d,%d.%02d,'%s');" % (
        i, (i * 7919) % n, i % 97, (i * 31) % 1000, i % 100, ("d%05d " % (i % 1000)) * (1 + i % 5)))
    if i % 2 == 0:
        out.append("INSERT INTO tag VALUES(%d,'t%d'),(%d,'u%d');" % (i, i % 300, i, i % 17))
out.append("COMMIT;")
out.append("WITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x+1 FROM c WHERE x<%d) INSERT INTO item "
           "SELECT x, printf('gen%%08x', x*2654435761 %% 4294967296), x %% 97, (x*13 %% 997)/3.0, "
           "substr('abcdefghijklmnopqrstuvwxyz', 1 + x %% 26) FROM c;" % (n, n * 4))
out += ["CREATE INDEX item_name ON item(name);", "CREATE INDEX item_cat ON item(cat, price);",
        "CREATE INDEX tag_tag ON tag(tag, item);",
        "SELECT cat, count(*), avg(price), max(length(descr)) FROM item GROUP BY cat ORDER BY 2 DESC LIMIT 3;",
        "SELECT t.tag, count(*), sum(i.price) FROM tag t JOIN item i ON i.id = t.item GROUP BY t.tag "
        "ORDER BY 2 DESC LIMIT 3;",
        "SELECT count(DISTINCT name) FROM item WHERE name LIKE 'item0%';",
        "SELECT group_concat(name, ',') IS NOT NULL FROM (SELECT name FROM item ORDER BY price DESC, id LIMIT 5000);",
        "UPDATE item SET descr = descr || '!' WHERE cat % 3 = 0;",
        "DELETE FROM item WHERE cat % 5 = 1;",
        "SELECT count(*), sum(length(descr)) FROM item;", "VACUUM;"]
print("\n".join(out))
EOF
$PY gen_sql.py 100000 >s.sql

# ---------------------------------------------------- traces -> workloads
for p in python cc1 sqlite; do
	rm -rf "tr-$p"
	case $p in
	python) PYTHONMALLOC=malloc "$AT" record -o tr-python -- $PY alloc.py >/dev/null ;;
	cc1) "$AT" record -o tr-cc1 -- "$CC1" -fpreprocessed x.i -quiet -dumpbase x.i -mtune=generic \
		-march=x86-64 -O2 -o x.s ;;
	sqlite) "$AT" record -o tr-sqlite -- /usr/bin/sqlite3 :memory: ".read s.sql" >/dev/null ;;
	esac
	"$AT" info "tr-$p" >"info-$p.txt"
	"$AT" convert "tr-$p" -o "$p.wl" --no-progress
	rm -rf "tr-$p"
done

# ----------------------------------------------------------- real runs
cat >measure.py <<'EOF'
import json, os, statistics, subprocess, sys, time
runs = int(sys.argv[1]); libs = json.loads(sys.argv[2]); progs = json.loads(sys.argv[3])
res = {p: {a: [] for a in libs} for p in progs}
for r in range(runs):
    for p, (argv, env) in progs.items():
        for a, lib in libs.items():
            e = dict(os.environ, **env)
            e.pop("LD_PRELOAD", None)
            if lib:
                e["LD_PRELOAD"] = lib
            t0 = time.perf_counter()
            pr = subprocess.Popen(argv, env=e, stdout=subprocess.DEVNULL)
            _, st, ru = os.wait4(pr.pid, 0)
            wall = time.perf_counter() - t0
            if st != 0:
                sys.exit("%s under %s failed: %d" % (p, a, st))
            res[p][a].append((wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
out = {}
for p in progs:
    out[p] = {}
    for a in libs:
        v = res[p][a]
        out[p][a] = {"wall_s": statistics.median(x[0] for x in v), "wall_min": min(x[0] for x in v),
                     "wall_max": max(x[0] for x in v), "cpu_s": statistics.median(x[1] for x in v),
                     "maxrss_kb": statistics.median(x[2] for x in v)}
json.dump(out, sys.stdout, indent=1)
EOF
LIBS="{\"glibc\": \"\", \"jemalloc\": \"$JE\", \"tcmalloc\": \"$TC\", \"mimalloc\": \"$MI\"}"
PROGS="{\"python\": [[\"$PY\", \"alloc.py\"], {\"PYTHONMALLOC\": \"malloc\"}],
 \"cc1\": [[\"$CC1\", \"-fpreprocessed\", \"x.i\", \"-quiet\", \"-dumpbase\", \"x.i\", \"-mtune=generic\",
           \"-march=x86-64\", \"-O2\", \"-o\", \"x.s\"], {}],
 \"sqlite\": [[\"/usr/bin/sqlite3\", \":memory:\", \".read s.sql\"], {}]}"
$PY measure.py "$RUNS" "$LIBS" "$PROGS" >real.json

# -------------------------------------------------------------- replays
for p in python cc1 sqlite; do
	"$AT" compare "$p.wl" --allocators glibc,jemalloc,tcmalloc,mimalloc --runs "$RUNS" --json >"cmp-$p.json"
	"$AT" compare "$p.wl" --allocators glibc,jemalloc,tcmalloc,mimalloc --runs "$RUNS" --timing off \
		--json >"cmp-off-$p.json"
done

# ---------------------------------------------------------------- table
$PY - "$RUNS" <<'EOF' | tee real.md
import json, sys
runs = sys.argv[1]
real = json.load(open("real.json"))
A = ["glibc", "jemalloc", "tcmalloc", "mimalloc"]
def rank(d, key):
    return " < ".join(sorted(A, key=lambda a: d[a][key]))
print("| program | allocator | real wall s (median of %s, min-max) | real CPU s | real max RSS MiB | replay wall ms "
      "(timing off) | replay CPU ms (timing off) | replay total call time Mcycles (serial) | replay max RSS MiB |"
      % runs)
print("|---|---|---|---|---|---|---|---|---|")
for p in ["python", "cc1", "sqlite"]:
    c = {x["allocator"]: x for x in json.load(open("cmp-%s.json" % p))["allocators"]}
    o = {x["allocator"]: x for x in json.load(open("cmp-off-%s.json" % p))["allocators"]}
    r = real[p]
    rows = {}
    for a in A:
        rows[a] = {"wall": r[a]["wall_s"], "cpu": r[a]["cpu_s"], "rss": r[a]["maxrss_kb"] / 1024,
                   "rwall": o[a]["wall_ms"]["median"], "rcpu": o[a]["thread_cpu_ms"]["median"],
                   "calls": c[a]["call_mcycles"]["median"],
                   "rrss": c[a]["max_rss_mib"]["median"]}
        print("| %s | %s | %.3f (%.3f-%.3f) | %.3f | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            p, a, r[a]["wall_s"], r[a]["wall_min"], r[a]["wall_max"], r[a]["cpu_s"], rows[a]["rss"],
            rows[a]["rwall"], rows[a]["rcpu"], rows[a]["calls"], rows[a]["rrss"]))
    print("| %s | ranking (best first) | %s | %s | %s | %s | %s | %s | %s |" % (
        p, rank(rows, "wall"), rank(rows, "cpu"), rank(rows, "rss"), rank(rows, "rwall"),
        rank(rows, "rcpu"), rank(rows, "calls"), rank(rows, "rrss")))
EOF
