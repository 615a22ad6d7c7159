/* compactcost.c - run the compaction `record` runs after the program
 * (atr_compact(), src/format/atr_compact.c) on trace files and print
 * their sizes before and after, and this process's CPU time (user+sys)
 * and max RSS.  Built and run by bench/encode_later.py.
 *
 * usage: compactcost LEVEL FILE...   (the files are rewritten)
 * COMPACT_THREADS (environment): compressing threads (default: one per
 * CPU, as record).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "atr_compact.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: compactcost LEVEL FILE...\n");
		return 2;
	}
	int level = atoi(argv[1]), bad = 0;
	const char *th = getenv("COMPACT_THREADS");
	int threads = th ? atoi(th) : 0;
	for (int i = 2; i < argc; i++) {
		uint64_t before = 0, after = 0;
		char err[512] = "";
		int r = atr_compact(argv[i], level, threads, &before, &after, err, sizeof err);
		printf("file %s %d %llu %llu %s\n", argv[i], r, (unsigned long long)before,
		       (unsigned long long)after, err);
		bad |= r < 0;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("cpu %.3f maxrss_kib %ld\n",
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
	       ru.ru_maxrss);
	return bad;
}
