#!/usr/bin/env bash
# test_completion.sh BUILD_DIR - dist/alloctrace.bash-completion, driven the
# way bash drives it (COMP_WORDS/COMP_CWORD, then COMPREPLY), once on its
# own and once after the bash-completion package's bash_completion if it is
# installed.  Every command's options must complete to exactly its
# --list-options table.
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
comp_file=$src/dist/alloctrace.bash-completion
bin=$build/alloctrace
fails=0

run_checks() {
    local mode=$1
    # shellcheck disable=SC1090
    source "$comp_file"
    local spec
    spec=$(complete -p alloctrace)
    [[ $spec == "complete -F _alloctrace alloctrace" ]] ||
        { echo "FAIL [$mode]: complete -p alloctrace: '$spec'"; fails=$((fails + 1)); }

    # comp WORDS...: the completions of the last word, sorted, one line
    comp() {
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=()
        _alloctrace
        local -a sorted
        mapfile -t sorted < <(printf '%s\n' "${COMPREPLY[@]}" | sort -u)
        local IFS=' '
        echo "${sorted[*]}"
    }
    # expect "WANT" WORDS...: exact match
    expect() {
        local want=$1 got
        shift
        got=$(comp "$@")
        if [[ $got != "$want" ]]; then
            echo "FAIL [$mode]: '${*:2}' completed to '$got', want '$want'"
            fails=$((fails + 1))
        fi
    }
    # contains "WORD" WORDS...: WORD among the completions
    contains() {
        local want=$1 got
        shift
        got=" $(comp "$@") "
        if [[ $got != *" $want "* ]]; then
            echo "FAIL [$mode]: '${*:2}' completed to '$got', want it to include '$want'"
            fails=$((fails + 1))
        fi
    }

    expect "record replay report" "$bin" re
    expect "--help --version" "$bin" --
    expect "replay report" "$bin" help rep
    expect "bytes calls leaked peak temporary" "$bin" report --by ""
    expect "calls" "$bin" report --by = ca
    expect "folded massif perfetto pprof" "$bin" export --format ""
    expect "jemalloc" "$bin" replay w.wl --allocator j
    expect "glibc,jemalloc" "$bin" compare w.wl --allocators glibc,j
    expect "mimalloc" "$bin" compare w.wl -a m
    expect "all first none" "$bin" replay w.wl --touch ""
    expect "--no-children --no-rss --no-start" "$bin" record --no
    contains "$$" "$bin" record -p ""
    contains "echo" "$bin" record -o d -- ec
    contains "echo" "$bin" record --stacks ec
    # every command's options, straight from its table
    local cmd
    for cmd in $("$bin" --list-commands | cut -f1); do
        local want
        want=$("$bin" "$cmd" --list-options | grep '^--' | cut -d' ' -f1 | tr -d '=' | sort -u |
            tr '\n' ' ' | sed 's/ $//')
        expect "$want" "$bin" "$cmd" --
    done
    # trace directories and .atr files for the analysis commands; any file
    # for a workload; directories to walk into
    local d
    d=$(mktemp -d)
    mkdir -p "$d/tr" "$d/other"
    : >"$d/tr/1.atr"
    : >"$d/x.atr"
    : >"$d/notes.txt"
    : >"$d/w.wl"
    (cd "$d" && expect "other tr x.atr" "$bin" info "") 
    (cd "$d" && expect "tr/1.atr" "$bin" report --by bytes tr/)
    (cd "$d" && expect "other tr x.atr" "$bin" diff x.atr "")
    (cd "$d" && expect "notes.txt other tr w.wl x.atr" "$bin" replay "")
    rm -rf "$d"
}

(run_checks standalone; exit $fails) || fails=$((fails + $?))
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
    (
        # shellcheck disable=SC1091
        source /usr/share/bash-completion/bash_completion
        run_checks bash-completion
        # with bash-completion, arguments of the traced program complete
        # as that program's (here: files)
        d=$(mktemp -d)
        : >"$d/data.txt"
        (cd "$d" && expect "data.txt" "$bin" record -- cat da)
        rm -rf "$d"
        exit $fails
    ) || fails=$((fails + $?))
else
    echo "note: /usr/share/bash-completion/bash_completion not installed: standalone only"
fi
[[ $fails -eq 0 ]] && echo "completion: ok"
exit $((fails > 0))
