#!/usr/bin/env bash
# aarch64 must build: cross-compile the preload library and link the CLI
# and the replay runner with Debian's aarch64 cross compiler (compile and
# link only; nothing runs).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cc=${CROSS_CC:-aarch64-linux-gnu-gcc}
if ! command -v "$cc" >/dev/null; then
  echo "FAIL: $cc not found (scripts/setup-deps.sh installs gcc-aarch64-linux-gnu)"
  exit 1
fi
out=$(mktemp -d /tmp/atr-cross.XXXXXX)
trap 'rm -rf "$out"' EXIT
warn=(-std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
      -Wno-unused-parameter -Werror -O2)
# the version script as src/preload/CMakeLists.txt makes it
calls=$(sed -n 's/^[[:space:]]*X([A-Z_0-9]*, *\([a-z_0-9]*\),.*/\1/p' "$src/src/format/atr_calls.h" |
  paste -sd';')
sed "s/@ATR_EXPORTED_CALLS@/$calls/" "$src/src/preload/exports.map.in" >"$out/exports.map"
"$cc" "${warn[@]}" -shared -fPIC -fvisibility=hidden -ftls-model=initial-exec \
  -I"$src/src/format" -I"$src/src/platform" -I"$src/include" \
  -Wl,--version-script="$out/exports.map" \
  -o "$out/liballoctrace.so" "$src"/src/preload/*.c "$src"/src/format/atr_v2.c -ldl -lpthread
tools=("$src"/src/main.c)
# (clickhouse builds without libcurl here: no arm64 libcurl installed)
for d in util format liveset analysis replay replaycmd output attach clickhouse cmds; do # the rooms (src/CMakeLists.txt)
  tools+=("$src"/src/$d/*.c)
done
for a in report.js report.css; do # the HTML report's assets (src/CMakeLists.txt)
  id=out_asset_${a//./_}
  cmake -DIN="$src/src/output/assets/$a" -DOUT="$out/$id.c" -DNAME="$id" \
    -P "$src/cmake/embed_asset.cmake"
  tools+=("$out/$id.c")
done
# the version as src/CMakeLists.txt defines it from project()
ver=$(sed -n 's/^project(alloctrace VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
# libzstd exists here for the host only (zstd.h is the same for every
# architecture): compile everything, then link with the zstd symbols the
# objects use defined as 0 (nothing runs; the check is that all else links).
mkdir -p "$out/o"
objs=()
for f in "${tools[@]}"; do
  o="$out/o/$(echo "$f" | tr / _).o"
  "$cc" "${warn[@]}" -I"$src/src" -I"$src/src/util" -I"$src/src/format" -I"$src/src/platform" -I"$src/include" \
    -DALLOCTRACE_VERSION_STRING="\"$ver\"" -c -o "$o" "$f"
  objs+=("$o")
done
defs=()
for s in $(aarch64-linux-gnu-nm -u "${objs[@]}" 2>/dev/null | awk '$2 ~ /^ZSTD_/ {print $2}' | sort -u); do
  defs+=("-Wl,--defsym=$s=0")
done
"$cc" -o "$out/alloctrace" "${objs[@]}" "${defs[@]}" -lpthread -lm
# the replay runner: src/replay_main.c on the rooms it links (util, format,
# liveset, replay, replaycmd), nothing else
"$cc" "${warn[@]}" -I"$src/src" -I"$src/src/util" -I"$src/src/format" -I"$src/src/platform" \
  -c -o "$out/o/replay_main.o" "$src/src/replay_main.c"
robjs=("$out/o/replay_main.o")
for d in util format liveset replay replaycmd; do
  robjs+=("$out"/o/*_src_${d}_*.o)
done
"$cc" -o "$out/alloctrace-replay" "${robjs[@]}" "${defs[@]}" -lpthread -lm
file "$out/liballoctrace.so" "$out/alloctrace" "$out/alloctrace-replay" | sed "s|$out/||"
file "$out/alloctrace" | grep -q aarch64
file "$out/alloctrace-replay" | grep -q aarch64
echo "aarch64 cross build: ok"
