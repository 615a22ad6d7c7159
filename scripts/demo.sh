#!/usr/bin/env bash
# The main job: build alloctrace, trace a real program, print what it did
# to malloc.  Usage: scripts/demo.sh [PROG ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
out=$(mktemp -d /tmp/alloctrace-demo.XXXXXX)
if [[ $# -eq 0 ]]; then
  py=$(command -v python3)
  [[ -x /usr/bin/python3 ]] && py=/usr/bin/python3
  set -- "$py" -c 'import json; d = [json.dumps({"k": i, "v": list(range(i % 50))}) for i in range(20000)]; print(len(d), "documents")'
fi
./build/alloctrace record -o "$out/trace" --stacks -- "$@"
./build/alloctrace info "$out/trace"
./build/alloctrace report --top 5 "$out/trace"
./build/alloctrace report --html "$out/report.html" "$out/trace"
echo "trace kept in $out/trace; open $out/report.html in a browser"
echo "(more: alloctrace dump|flamegraph|arenas|convert ... $out/trace)"
