#!/usr/bin/env bash
# The whole test suite, from a fresh clone: dependencies, a -Werror build and
# its tests, then an ASan+UBSan build of the tools and the same tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B build -DALLOCTRACE_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-san -DALLOCTRACE_WERROR=ON -DALLOCTRACE_SANITIZE=ON >/dev/null
cmake --build build-san -j"$jobs"
(cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs")
