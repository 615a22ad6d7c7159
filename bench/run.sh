#!/usr/bin/env bash
# Tracer overhead benchmark: untraced vs alloctrace vs glibc mtrace vs heaptrack.
# See bench/README.md for what is measured and what every column means.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ---------------------------------------------------------------- knobs ---
ALLOCTRACE_LIB=$(realpath -m "${ALLOCTRACE_LIB:-$BENCH_DIR/../build/liballoctrace.so}")
ALLOCTRACE_BIN=$(realpath -m "${ALLOCTRACE_BIN:-$BENCH_DIR/../build/alloctrace}")
RUNS=${RUNS:-5}                   # repetitions per (case, tool); median is reported
ITERS=${ITERS:-56000000}          # total mallocbench iterations (split evenly across threads)
SLOW_DIV=${SLOW_DIV:-4}           # mtrace/heaptrack run ITERS/SLOW_DIV iterations
THREADS_LIST=${THREADS_LIST:-"1 8"}
REAL=${REAL:-1}                   # 0: skip the "real program" cases
PY_N=${PY_N:-50000}               # loop count of the python one-liner
CC1_FUNCS=${CC1_FUNCS:-100}       # functions in the generated C file compiled by cc1
CC1_MTRACE=${CC1_MTRACE:-0}       # 1: also run mtrace on cc1 (very slow, see README)
PYTHON=${PYTHON:-/usr/bin/python3}   # not a pyenv shim: a shim is a bash script
CC=${CC:-gcc}
MTRACE_LIB=${MTRACE_LIB:-/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0}
HEAPTRACK=${HEAPTRACK:-heaptrack}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
KEEP_TMP=${KEEP_TMP:-0}

# Never let the caller's environment leak a tracer into the baseline.
unset LD_PRELOAD MALLOC_TRACE ALLOCTRACE_FILE ALLOCTRACE_TIMING || true

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
[[ $ITERS =~ ^[0-9]+$ ]] || die "ITERS must be an integer"
[[ $SLOW_DIV =~ ^[1-9][0-9]*$ ]] || die "SLOW_DIV must be a positive integer"

WORK=$(mktemp -d /tmp/alloctrace-bench.XXXXXX)
cleanup() {
    if [[ $KEEP_TMP == 1 ]]; then log "kept temp dir $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

TSV=$WORK/runs.tsv        # one line per measured run
NOTES=()                  # free-text notes collected for the report

# ---------------------------------------------------------------- build ---
log "building into $WORK"
"$CC" -std=gnu11 -O2 -pthread -Wall -Wextra -o "$WORK/mallocbench" "$BENCH_DIR/mallocbench.c"
"$CC" -std=gnu11 -O2 -shared -fPIC -Wall -Wextra -o "$WORK/libmtrace_start.so" "$BENCH_DIR/mtrace_start.c"

# ---------------------------------------------------------------- tools ---
HAVE_ALLOCTRACE=0
if [[ -f $ALLOCTRACE_LIB ]]; then
    HAVE_ALLOCTRACE=1
else
    NOTES+=("alloctrace SKIPPED: preload library \`$ALLOCTRACE_LIB\` does not exist (set ALLOCTRACE_LIB).")
    log "alloctrace library not found at $ALLOCTRACE_LIB -> alloctrace configs skipped"
fi
HAVE_ALLOCTRACE_BIN=0
if [[ $HAVE_ALLOCTRACE == 1 && -x $ALLOCTRACE_BIN ]]; then
    HAVE_ALLOCTRACE_BIN=1
elif [[ $HAVE_ALLOCTRACE == 1 ]]; then
    NOTES+=("alloctrace CLI \`$ALLOCTRACE_BIN\` not found: no \`alloctrace info\` call counts.")
fi
HAVE_MTRACE=0
if [[ -f $MTRACE_LIB ]]; then HAVE_MTRACE=1; else
    NOTES+=("mtrace SKIPPED: \`$MTRACE_LIB\` not found."); fi
HAVE_HEAPTRACK=0
if command -v "$HEAPTRACK" >/dev/null 2>&1; then HAVE_HEAPTRACK=1; else
    NOTES+=("heaptrack SKIPPED: \`$HEAPTRACK\` not in PATH."); fi

TOOLS=(untraced)
[[ $HAVE_ALLOCTRACE == 1 ]] && TOOLS+=(alloctrace alloctrace_later alloctrace_timing)
[[ $HAVE_MTRACE == 1 ]] && TOOLS+=(mtrace)
[[ $HAVE_HEAPTRACK == 1 ]] && TOOLS+=(heaptrack)

is_slow_tool() { [[ $1 == mtrace || $1 == heaptrack ]]; }

# ---------------------------------------------------------------- cases ---
# A case is a program invocation.  mb<T> runs ITERS total iterations,
# mb<T>s runs ITERS/SLOW_DIV (used by the slow tools, with its own
# untraced baseline).  "start" (0 iterations) measures fixed start-up cost.
SLOW_ITERS=$((ITERS / SLOW_DIV))
CASES=(start)
for t in $THREADS_LIST; do
    CASES+=("mb$t")
    [[ $SLOW_DIV != 1 ]] && CASES+=("mb${t}s")
done

CC1=""
if [[ $REAL == 1 ]]; then
    CASES+=(py)
    CC1=$("$CC" -print-prog-name=cc1)
    if [[ -x $CC1 ]]; then
        CASES+=(cc1)
        if [[ $CC1_MTRACE != 1 && $HAVE_MTRACE == 1 ]]; then
            NOTES+=("mtrace is not run on cc1 (set CC1_MTRACE=1 to force): mtrace resolves every caller address with _dl_addr(), a linear scan of the caller object's dynamic symbols, and cc1 exports $( (nm -D --defined-only "$CC1" 2>/dev/null || true) | wc -l) of them (~140 us per call measured on the dev VM), so one run would take minutes.")
        fi
    else
        NOTES+=("cc1 case skipped: \`$CC -print-prog-name=cc1\` gave \`$CC1\`.")
    fi
    [[ -x $PYTHON ]] || die "PYTHON=$PYTHON is not executable"
fi

# Deterministic synthetic C file (CC1_FUNCS functions) for the cc1 case.
gen_synth_c() {
    local n=$1 i
    printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n#include <pthread.h>\n\n'
    printf 'struct node { struct node *next; long key; double val; char name[32]; };\n'
    for ((i = 0; i < n; i++)); do
        cat <<EOT
static long f$i(struct node *h, long x, const char *s)
{
    long acc = $i;
    for (struct node *p = h; p; p = p->next) {
        switch ((p->key + x) % 7) {
        case 0: acc += p->key * $((i % 13 + 1)); break;
        case 1: acc ^= (long)strlen(p->name) << $((i % 5)); break;
        case 2: acc -= (long)(p->val * $i.5); break;
        case 3: if (s && s[0] == 'a' + $((i % 26))) acc++; break;
        case 4: acc = acc * 31 + (long)sqrt((double)(p->key < 0 ? -p->key : p->key)); break;
        default: acc += x % $((i % 11 + 2)); break;
        }
    }
    char buf[64];
    snprintf(buf, sizeof buf, "f$i:%ld", acc);
    return acc + (long)buf[3];
}
EOT
    done
    printf 'long run_all(struct node *h, long x)\n{\n    long t = 0;\n'
    for ((i = 0; i < n; i++)); do printf '    t += f%d(h, x + %d, "n%d");\n' "$i" "$i" "$i"; done
    printf '    return t;\n}\n'
}
if [[ -n $CC1 && -x $CC1 ]]; then
    gen_synth_c "$CC1_FUNCS" >"$WORK/synth.c"
    "$CC" -E "$WORK/synth.c" -o "$WORK/synth.i"
fi

PY_CODE="import json; [json.dumps(list(range(100))) for _ in range($PY_N)]"

# case_cmd CASE -> sets CMD (argv) and CASE_THREADS / CASE_ITERS
case_cmd() {
    local c=$1 t
    CASE_THREADS=""; CASE_ITERS=""
    case $c in
    start) CASE_THREADS=1; CASE_ITERS=0 ;;
    mb*s) t=${c#mb}; t=${t%s}; CASE_THREADS=$t; CASE_ITERS=$((SLOW_ITERS / t)) ;;
    mb*) t=${c#mb}; CASE_THREADS=$t; CASE_ITERS=$((ITERS / t)) ;;
    py) CMD=("$PYTHON" -I -c "$PY_CODE"); return ;;
    cc1) CMD=("$CC1" -quiet -O2 "$WORK/synth.i" -o /dev/null); return ;;
    *) die "unknown case $c" ;;
    esac
    # run as ./mallocbench from $WORK: mtrace writes the caller's object path
    # into every line, so a long absolute path would inflate its trace size
    CMD=(./mallocbench "$CASE_THREADS" "$CASE_ITERS")
}

# Which tools run on which case.
applies() {
    local tool=$1 c=$2
    case $c in
    cc1) [[ $tool != mtrace || $CC1_MTRACE == 1 ]] ;;
    start | py) return 0 ;;
    mb*s) [[ $tool == untraced ]] || is_slow_tool "$tool" ;;
    mb*)
        [[ $tool == untraced ]] && return 0
        if is_slow_tool "$tool"; then [[ $SLOW_DIV == 1 ]]; else return 0; fi
        ;;
    esac
}

# The "mallocbench case" used by TOOL for thread count T.
mb_case_for() {
    local tool=$1 t=$2
    if is_slow_tool "$tool" && [[ $SLOW_DIV != 1 ]]; then echo "mb${t}s"; else echo "mb$t"; fi
}

# ----------------------------------------------------------- measuring ---
TF=$WORK/time.txt OUT=$WORK/out.txt ERR=$WORK/err.txt
ATR=$WORK/x.atr MTR=$WORK/mtrace.txt HTP=$WORK/ht

trace_file_of() {
    case $1 in
    alloctrace | alloctrace_later | alloctrace_timing) echo "$ATR" ;;
    mtrace) echo "$MTR" ;;
    heaptrack) compgen -G "$HTP.*" | head -n1 || true ;;
    *) echo "" ;;
    esac
}

# run_one CASE TOOL REP: runs once, appends a line to $TSV.
# TSV columns: case tool rep status wall user sys trace_bytes bench_calls tool_count raw_bytes
run_one() {
    local c=$1 tool=$2 rep=$3 rc=0 status=ok
    local envs=() cmd
    case_cmd "$c"
    cmd=("${CMD[@]}")
    rm -f "$ATR" "$MTR" "$HTP".* "$TF" "$OUT" "$ERR"
    case $tool in
    untraced) ;;
    alloctrace) envs=("LD_PRELOAD=$ALLOCTRACE_LIB" "ALLOCTRACE_FILE=$ATR") ;;
    alloctrace_timing) envs=("LD_PRELOAD=$ALLOCTRACE_LIB" "ALLOCTRACE_FILE=$ATR" "ALLOCTRACE_TIMING=1") ;;
    # what `record` sets: full blocks copied raw, encoded after the program
    # (record's compaction, not timed here: the file stays raw, ~20 B/call)
    alloctrace_later) envs=("LD_PRELOAD=$ALLOCTRACE_LIB" "ALLOCTRACE_FILE=$ATR" "ALLOCTRACE_ENCODE=later") ;;
    mtrace) envs=("LD_PRELOAD=$MTRACE_LIB $WORK/libmtrace_start.so" "MALLOC_TRACE=$MTR") ;;
    heaptrack) cmd=("$HEAPTRACK" -o "$HTP" "${cmd[@]}") ;;
    esac

    # Bash's `time` keyword: no extra process between us and the program,
    # so the preload only reaches the measured program (and its children).
    local TIMEFORMAT='%3R %3U %3S'
    # (the inner braces matter: `time (...) 2>file` would lose the report)
    { time { (
        cd "$WORK"
        # shellcheck disable=SC2163  # kv is "NAME=value", exported as such
        for kv in "${envs[@]}"; do export "$kv"; done
        exec "${cmd[@]}"
    ) >"$OUT" 2>"$ERR"; }; } 2>"$TF" || rc=$?

    local wall user sys
    read -r wall user sys <"$TF" || true
    [[ $rc == 0 ]] || { status="exit$rc"; log "FAILED: $c/$tool rep $rep exit $rc: $(tail -n3 "$ERR" | tr '\n' ' ')"; }

    # bench calls (mallocbench prints calls=N on stdout)
    local bench_calls=""
    bench_calls=$(sed -n 's/^calls=//p' "$OUT" | head -n1)
    if [[ $c == mb* || $c == start ]] && [[ -z $bench_calls && $status == ok ]]; then
        status=nocalls
    fi

    # trace file checks
    local tfile bytes="" tool_count="" raw=""
    tfile=$(trace_file_of "$tool")
    if [[ $tool != untraced ]]; then
        if [[ -n $tfile && -s $tfile ]]; then
            bytes=$(stat -c %s "$tfile")
        else
            [[ $status == ok ]] && status=notrace
            log "FAILED: $c/$tool rep $rep produced no trace file"
        fi
    fi
    # mtrace: a file holding only "= Start" means tracing never happened.
    if [[ $tool == mtrace && $status == ok && ${bytes:-0} -le 64 ]]; then
        status=emptytrace
        log "FAILED: $c/mtrace rep $rep wrote only $bytes bytes"
    fi

    # Counts reported by the tool itself (first repetition only: can be slow)
    if [[ $rep == 1 && $status == ok ]]; then
        case $tool in
        mtrace)
            # one line per call, except realloc which writes "<" and ">" lines
            if [[ $c == py || $c == cc1 || $c == start ]]; then
                tool_count=$(awk '$1=="@" && ($(NF-2)=="+" || $(NF-2)==">" || $(NF-1)=="-") {n++} END {print n+0}' "$tfile")
            fi
            ;;
        heaptrack)
            tool_count=$(sed -n 's/^[[:space:]]*allocations:[[:space:]]*//p' "$OUT" "$ERR" | head -n1)
            if [[ $tfile == *.zst ]] && command -v zstd >/dev/null; then
                raw=$(zstd -dc "$tfile" 2>/dev/null | wc -c || true)
            elif [[ $tfile == *.gz ]]; then
                raw=$(gzip -dc "$tfile" 2>/dev/null | wc -c || true)
            fi
            ;;
        alloctrace | alloctrace_later | alloctrace_timing)
            if [[ $HAVE_ALLOCTRACE_BIN == 1 ]]; then
                if "$ALLOCTRACE_BIN" info "$tfile" --json >"$WORK/info-$c-$tool.json" 2>"$WORK/info.err"; then
                    tool_count=$(grep -o -E '"(total_calls)"[[:space:]]*:[[:space:]]*[0-9]+' \
                        "$WORK/info-$c-$tool.json" | head -n1 | grep -o -E '[0-9]+$' || true)
                else
                    log "alloctrace info failed on $c/$tool: $(head -c 200 "$WORK/info.err")"
                fi
            fi
            ;;
        esac
    fi

    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$c" "$tool" "$rep" "$status" "${wall:-}" "${user:-}" "${sys:-}" \
        "$bytes" "$bench_calls" "$tool_count" "$raw" >>"$TSV"
    rm -f "$ATR" "$MTR" "$HTP".*
    [[ $status == ok ]]
}

# ------------------------------------------------------------------ run ---
log "tools: ${TOOLS[*]}"
log "cases: ${CASES[*]}  (ITERS=$ITERS, slow tools: $SLOW_ITERS, RUNS=$RUNS)"
T_START=$(date +%s)

# warm-up (page cache, binaries, heaptrack's helper), not recorded
for c in "${CASES[@]}"; do
    case_cmd "$c"
    (cd "$WORK" && exec "${CMD[@]}") >/dev/null 2>&1 || die "warm-up of case $c failed: ${CMD[*]}"
done

# Round-robin: every repetition runs every (case, tool) once, so slow drift
# of the machine affects all tools alike.
for ((rep = 1; rep <= RUNS; rep++)); do
    log "repetition $rep/$RUNS"
    for c in "${CASES[@]}"; do
        for tool in "${TOOLS[@]}"; do
            applies "$tool" "$c" || continue
            run_one "$c" "$tool" "$rep" || true
        done
    done
    sync
done
T_END=$(date +%s)

# -------------------------------------------------------------- analysis ---
# field numbers in TSV
F_WALL=5 F_USER=6 F_SYS=7 F_BYTES=8 F_CALLS=9 F_TCOUNT=10 F_RAW=11

# med CASE TOOL EXPR: median over ok runs of an awk expression on fields
med() {
    awk -F'\t' -v c="$1" -v k="$2" '$1==c && $2==k && $4=="ok" {v = '"$3"'; if (v != "") print v}' "$TSV" |
        sort -g | awk '{a[NR]=$1} END {if (NR == 0) exit; if (NR % 2) print a[(NR+1)/2]; else printf "%.6f\n", (a[NR/2]+a[NR/2+1])/2}'
}
# first non-empty value of a field over ok runs
first() {
    awk -F'\t' -v c="$1" -v k="$2" -v f="$3" '$1==c && $2==k && $4=="ok" && $f!="" {print $f; exit}' "$TSV"
}
nok() { awk -F'\t' -v c="$1" -v k="$2" '$1==c && $2==k && $4=="ok" {n++} END {print n+0}' "$TSV"; }
nfail() { awk -F'\t' -v c="$1" -v k="$2" '$1==c && $2==k && $4!="ok" {n++} END {print n+0}' "$TSV"; }
calc() { awk "BEGIN { $1 }"; }

label() {
    case $1 in
    untraced) echo "untraced" ;;
    alloctrace) echo "alloctrace" ;;
    alloctrace_timing) echo "alloctrace (TIMING=1)" ;;
    alloctrace_later) echo "alloctrace (ENCODE=later, as record; raw file)" ;;
    mtrace) echo "glibc mtrace" ;;
    heaptrack) echo "heaptrack (zstd)" ;;
    esac
}

REPORT=$WORK/report.md
{
    echo "# alloctrace tracer overhead benchmark"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), host: $(hostname)"
    echo "- CPU: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores online" \
        "($(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*/hypervisor: /p' | head -n1))"
    echo "- kernel: $(uname -srm)"
    echo "- glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version | head -n1)"
    echo "- gcc: $("$CC" --version | head -n1)"
    echo "- heaptrack: $( ([[ $HAVE_HEAPTRACK == 1 ]] && "$HEAPTRACK" --version 2>/dev/null | head -n1) || echo n/a)"
    echo "- python (real-program case): $("$PYTHON" --version 2>&1)"
    at_desc="not built (skipped)"
    [[ $HAVE_ALLOCTRACE == 1 ]] && at_desc="\`$ALLOCTRACE_LIB\`"
    git_rev=$(git -C "$BENCH_DIR" rev-parse --short HEAD 2>/dev/null || echo none)
    if [[ -n $(git -C "$BENCH_DIR" status --porcelain 2>/dev/null | head -n1) ]]; then git_rev+="+dirty"; fi
    echo "- alloctrace: $at_desc, git $git_rev"
    echo "- parameters: RUNS=$RUNS ITERS=$ITERS SLOW_DIV=$SLOW_DIV (mtrace/heaptrack run $SLOW_ITERS iterations)," \
        "PY_N=$PY_N CC1_FUNCS=$CC1_FUNCS; total benchmark time $((T_END - T_START)) s"
    echo
    if ((${#NOTES[@]})); then
        for n in "${NOTES[@]}"; do echo "> **Note:** $n"; echo; done
    fi

    # fixed (start-up/shutdown) cost per tool, from the 0-iteration case
    declare -A FIXED_MS
    base0=$(med start untraced "\$$F_WALL")
    for tool in "${TOOLS[@]}"; do
        v=$(med start "$tool" "\$$F_WALL")
        if [[ -n $v && -n $base0 ]]; then FIXED_MS[$tool]=$(calc "printf \"%.1f\", ($v - $base0) * 1000"); else FIXED_MS[$tool]=""; fi
    done

    echo "## mallocbench (per-call overhead)"
    echo
    echo "| threads | tool | iters | calls | median wall s | ns/call added | net ns/call | CPU ns/call added | fixed ms | trace bytes | bytes/call | raw bytes/call | vs alloctrace | runs ok |"
    echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for t in $THREADS_LIST; do
        # alloctrace reference for the ratio column
        ref=""
        if [[ $HAVE_ALLOCTRACE == 1 ]]; then
            ca=mb$t
            a=$(med "$ca" alloctrace "\$$F_WALL"); b=$(med "$ca" untraced "\$$F_WALL"); n=$(first "$ca" untraced $F_CALLS)
            [[ -n $a && -n $b && -n $n ]] && ref=$(calc "printf \"%.3f\", ($a - $b) * 1e9 / $n")
        fi
        for tool in "${TOOLS[@]}"; do
            c=$(mb_case_for "$tool" "$t")
            applies "$tool" "$c" || continue
            case_cmd "$c"
            iters=$((CASE_ITERS * CASE_THREADS))
            calls=$(first "$c" untraced $F_CALLS)
            wall=$(med "$c" "$tool" "\$$F_WALL")
            base=$(med "$c" untraced "\$$F_WALL")
            cpu=$(med "$c" "$tool" "\$$F_USER + \$$F_SYS")
            cpub=$(med "$c" untraced "\$$F_USER + \$$F_SYS")
            bytes=$(med "$c" "$tool" "\$$F_BYTES"); [[ -z $bytes ]] || bytes=$(calc "printf \"%.0f\", $bytes")
            raw=$(first "$c" "$tool" $F_RAW)
            fixed=${FIXED_MS[$tool]:-}
            ns="—" net="—" cpuns="—" bpc="—" rawpc="—" ratio="—"
            if [[ -n $wall && -n $base && -n $calls && $tool != untraced ]]; then
                ns=$(calc "printf \"%.1f\", ($wall - $base) * 1e9 / $calls")
                [[ -n $fixed ]] && net=$(calc "printf \"%.1f\", (($wall - $base) * 1e9 - $fixed * 1e6) / $calls")
                cpuns=$(calc "printf \"%.1f\", ($cpu - $cpub) * 1e9 / $calls")
                [[ -n $bytes ]] && bpc=$(calc "printf \"%.2f\", $bytes / $calls")
                [[ -n $raw ]] && rawpc=$(calc "printf \"%.2f\", $raw / $calls")
                [[ -n $ref ]] && ratio=$(calc "r = $ref; if (r <= 0) print \"n/a\"; else printf \"%.2fx\", (($wall - $base) * 1e9 / $calls) / r")
            fi
            [[ $tool == untraced ]] && fixed="—"
            echo "| $t | $(label "$tool") | $iters | ${calls:-?} | ${wall:-FAIL} | $ns | $net | $cpuns | ${fixed:-—} | ${bytes:-—} | $bpc | $rawpc | $ratio | $(nok "$c" "$tool")/$((RUNS)) |"
        done
    done
    echo

    if [[ $REAL == 1 ]]; then
        echo "## real programs (wall-time overhead)"
        echo
        echo "| program | tool | median wall s | overhead % | CPU overhead % | trace bytes | calls seen by tool | vs alloctrace | runs ok |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
        for c in py cc1; do
            [[ " ${CASES[*]} " == *" $c "* ]] || continue
            case $c in
            py) pname="python3 json one-liner (PY_N=$PY_N)" ;;
            cc1) pname="cc1 -O2 synthetic.i ($CC1_FUNCS funcs)" ;;
            esac
            base=$(med "$c" untraced "\$$F_WALL")
            cpub=$(med "$c" untraced "\$$F_USER + \$$F_SYS")
            ref=""
            if [[ $HAVE_ALLOCTRACE == 1 ]]; then
                a=$(med "$c" alloctrace "\$$F_WALL")
                [[ -n $a && -n $base ]] && ref=$(calc "printf \"%.4f\", ($a - $base) / $base * 100")
            fi
            for tool in "${TOOLS[@]}"; do
                applies "$tool" "$c" || continue
                wall=$(med "$c" "$tool" "\$$F_WALL")
                cpu=$(med "$c" "$tool" "\$$F_USER + \$$F_SYS")
                bytes=$(med "$c" "$tool" "\$$F_BYTES"); [[ -z $bytes ]] || bytes=$(calc "printf \"%.0f\", $bytes")
                tc=$(first "$c" "$tool" $F_TCOUNT)
                ov="—" cov="—" ratio="—"
                if [[ -n $wall && -n $base && $tool != untraced ]]; then
                    ov=$(calc "printf \"%.1f\", ($wall - $base) / $base * 100")
                    cov=$(calc "printf \"%.1f\", ($cpu - $cpub) / $cpub * 100")
                    [[ -n $ref ]] && ratio=$(calc "r = $ref; if (r <= 0) print \"n/a\"; else printf \"%.2fx\", (($wall - $base) / $base * 100) / r")
                fi
                case $tool in
                mtrace) [[ -n $tc ]] && tc="$tc (trace lines)" ;;
                heaptrack) [[ -n $tc ]] && tc="$tc (allocations)" ;;
                alloctrace*) [[ -n $tc ]] && tc="$tc (alloctrace info)" ;;
                esac
                echo "| $pname | $(label "$tool") | ${wall:-FAIL} | $ov | $cov | ${bytes:-—} | ${tc:-—} | $ratio | $(nok "$c" "$tool")/$RUNS |"
            done
        done
        echo
    fi

    # failures
    fails=$(awk -F'\t' '$4!="ok"' "$TSV" | wc -l)
    if ((fails > 0)); then
        echo "## failed runs"
        echo
        echo '```'
        awk -F'\t' '$4!="ok" {print $1, $2, "rep", $3, $4}' "$TSV"
        echo '```'
        echo
    fi

    if compgen -G "$WORK/info-*.json" >/dev/null; then
        echo "<details><summary>alloctrace info --json (first repetition)</summary>"
        echo
        for f in "$WORK"/info-*.json; do
            echo "\`$(basename "$f")\`:"
            echo
            echo '```json'
            head -c 4000 "$f"
            echo
            echo '```'
        done
        echo "</details>"
        echo
    fi

    echo "<details><summary>raw runs (case tool rep status wall user sys trace_bytes bench_calls tool_count raw_bytes)</summary>"
    echo
    echo '```'
    cat "$TSV"
    echo '```'
    echo "</details>"
} >"$REPORT"

mkdir -p "$RESULTS_DIR"
OUTFILE=$RESULTS_DIR/$(date +%Y-%m-%d-%H%M%S)-$(hostname -s 2>/dev/null || hostname).md
cp "$REPORT" "$OUTFILE"
cat "$REPORT"
log "report written to $OUTFILE (benchmark took $((T_END - T_START)) s)"
