#!/bin/sh
# Build the third-party allocator benchmarks of issue 19 from their public
# sources (nothing of them is committed here):
#   test-stress   mimalloc's test/test-stress.c, from Debian's mimalloc source
#                 package (`apt-get source`: needs a deb-src line)
#   larson        mimalloc-bench bench/larson/larson.cpp
#   xmalloc-test  mimalloc-bench bench/xmalloc-test/xmalloc-test.c
#   alloc-test    mimalloc-bench bench/alloc-test/ (OLogN's allocator tester,
#                 C++17), with $ALLOC_TEST_ITERS (default 20000000) operations
#                 per thread instead of its hard-coded 100000000 (patched in a
#                 copy under BINDIR/src: 2 x 100 M calls is too big a trace)
# built with mimalloc-bench's own flags (bench/CMakeLists.txt) and -O2.
#
#   bench/fidelity/thirdparty.sh BINDIR [PROGRAM...]   (default: all four)
#
# mimalloc-bench: $MIMALLOC_BENCH (a checkout of
# https://github.com/daanx/mimalloc-bench), else cloned into BINDIR/src.
# Then: bench/fidelity/run.sh --thirdparty BINDIR [--programs larson,...]
set -eu
B=${1:?usage: thirdparty.sh BINDIR [PROGRAM...]}
shift
WANT=${*:-test-stress larson xmalloc-test alloc-test}
for p in $WANT; do
	case $p in
	test-stress | larson | xmalloc-test | alloc-test) ;;
	*)
		echo "thirdparty: unknown program '$p' (test-stress, larson, xmalloc-test, alloc-test)" >&2
		exit 1
		;;
	esac
done
want() { case " $WANT " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$B/src"
B=$(cd "$B" && pwd)

if want test-stress && [ ! -x "$B/test-stress" ]; then
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
if [ "$WANT" != test-stress ] && [ ! -d "$MB/bench" ]; then
	git clone -q --depth 1 https://github.com/daanx/mimalloc-bench "$MB" || {
		echo "thirdparty: no mimalloc-bench checkout: set MIMALLOC_BENCH=DIR" >&2
		exit 1
	}
fi
if want larson; then
	g++ -O2 -w -std=c++17 -DCPP=1 -o "$B/larson" "$MB/bench/larson/larson.cpp" -lpthread
fi
if want xmalloc-test; then
	gcc -O2 -w -o "$B/xmalloc-test" "$MB/bench/xmalloc-test/xmalloc-test.c" -lpthread
fi
if want alloc-test; then
	# bench/CMakeLists.txt: BENCH=4 (one run with the thread count of argv[1],
	# without the void-allocator baseline), Release (NDEBUG), C++17.
	AT=$B/src/alloc-test
	rm -rf "$AT"
	cp -r "$MB/bench/alloc-test" "$AT"
	N=${ALLOC_TEST_ITERS:-20000000}
	case $N in '' | 0 | *[!0-9]*)
		echo "thirdparty: ALLOC_TEST_ITERS must be a positive integer, not '$N'" >&2
		exit 1
		;;
	esac
	sed -i "s/params\.startupParams\.iterCount = 100000000;/params.startupParams.iterCount = $N;/" \
		"$AT/allocator_tester.cpp"
	grep -q "iterCount = $N;" "$AT/allocator_tester.cpp" || {
		echo "thirdparty: alloc-test: no 'iterCount = 100000000;' to patch in $MB/bench/alloc-test/allocator_tester.cpp" >&2
		exit 1
	}
	g++ -O2 -DNDEBUG -w -std=c++17 -DBENCH=4 -o "$B/alloc-test" "$AT/test_common.cpp" "$AT/allocator_tester.cpp" \
		-lpthread
fi
for p in $WANT; do ls -l "$B/$p"; done
