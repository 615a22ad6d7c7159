#!/bin/sh
# Build the third-party allocator benchmarks of issue 19 from their public
# sources (nothing of them is committed here):
#   test-stress   mimalloc's test/test-stress.c, from Debian's mimalloc source
#                 package (`apt-get source`: needs a deb-src line)
#   larson        mimalloc-bench bench/larson/larson.cpp
#   xmalloc-test  mimalloc-bench bench/xmalloc-test/xmalloc-test.c
# built with mimalloc-bench's own flags (bench/CMakeLists.txt) and -O2.
#
#   bench/fidelity/thirdparty.sh BINDIR
#
# mimalloc-bench: $MIMALLOC_BENCH (a checkout of
# https://github.com/daanx/mimalloc-bench), else cloned into BINDIR/src.
# Then: bench/fidelity/run.sh --thirdparty BINDIR [--programs larson,...]
set -eu
B=${1:?usage: thirdparty.sh BINDIR}
mkdir -p "$B/src"
B=$(cd "$B" && pwd)

if [ ! -x "$B/test-stress" ]; then
	(cd "$B/src" && apt-get source --download-only mimalloc >/dev/null) || {
		echo "thirdparty: 'apt-get source mimalloc' failed: add a deb-src line for your release" \
			"(/etc/apt/sources.list.d/, Types: deb-src) and run apt-get update" >&2
		exit 1
	}
	tar -C "$B/src" -xf "$(ls "$B"/src/mimalloc_*.orig.tar.* | head -1)"
	# USE_STD_MALLOC: the program calls malloc/free (not mimalloc's API)
	gcc -O2 -DNDEBUG -DUSE_STD_MALLOC -o "$B/test-stress" "$B"/src/mimalloc-*/test/test-stress.c -lpthread
fi

MB=${MIMALLOC_BENCH:-$B/src/mimalloc-bench}
if [ ! -d "$MB/bench" ]; then
	git clone -q --depth 1 https://github.com/daanx/mimalloc-bench "$MB" || {
		echo "thirdparty: no mimalloc-bench checkout: set MIMALLOC_BENCH=DIR" >&2
		exit 1
	}
fi
g++ -O2 -w -std=c++17 -DCPP=1 -o "$B/larson" "$MB/bench/larson/larson.cpp" -lpthread
gcc -O2 -w -o "$B/xmalloc-test" "$MB/bench/xmalloc-test/xmalloc-test.c" -lpthread
ls -l "$B/test-stress" "$B/larson" "$B/xmalloc-test"
