#!/usr/bin/env bash
# Every C/C++ source is formatted with the repository's .clang-format
# (clang-format 14, Debian 12).  Fix with:
#   git ls-files '*.c' '*.h' '*.cpp' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not installed (scripts/setup-deps.sh installs it)"; exit 1; }
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=1
  fi
done < <(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || find src include tests bench -name '*.[ch]' -o -name '*.cpp')
exit $bad
