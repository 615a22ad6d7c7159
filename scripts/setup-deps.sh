#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages alloctrace needs to build and test.
#   scripts/setup-deps.sh          build + test dependencies
#   scripts/setup-deps.sh --bench  also the peers the benchmarks compare with
set -euo pipefail

# The allocators replay/compare test against are test dependencies: the
# suite replays under each (tests/test_allocators.py).
pkgs=(cmake make gcc g++ pkg-config clang-format libcmocka-dev python3 git sqlite3 file procps
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross
      libunwind-dev libdw-dev libelf-dev libiberty-dev binutils valgrind zlib1g-dev libzstd-dev chromium
      man-db bash-completion debhelper dpkg-dev fakeroot lintian
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
      libcurl4-openssl-dev clickhouse-server clickhouse-client)
if [[ "${1:-}" == "--bench" ]]; then
  # peers for bench/; time for /usr/bin/time; perf for the profiles quoted
  # in bench/replay/RESULTS.md
  pkgs+=(heaptrack valgrind hyperfine time linux-perf)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "setup-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
