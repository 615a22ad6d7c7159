/* v2paths.c - the reader's two v2 paths on recorded traces
 * (tests/test_v2paths.py): for every trace of every argument (a file or a
 * directory of them), the frames read record by record must give the
 * events of the frames decoded whole into v1 words (atr_set_v2_words),
 * event for event, field for field (atw_v2_paths_agree); and the narrow
 * path (atr_iter_next_calls: compact call records) must give the events
 * of atr_iter_next_ref (atw_calls_path_agree), also with frames
 * decompressed by a helper (atr_iter_help: between batches, and on a
 * thread of its own).
 *   v2paths TRACE|DIR...   prints "N events in M traces agree"; exit 1 on
 *   the first disagreement or a trace that does not read.
 */
#include <stdint.h>
#include <stdio.h>
#include <inttypes.h>

#include "atr_reader.h"
#include "atr_testwriter.h"

int main(int argc, char **argv)
{
	uint64_t total = 0, traces = 0;
	for (int i = 1; i < argc; i++) {
		char err[512], **paths;
		size_t n;
		if (atr_list(argv[i], &paths, &n, err, sizeof err) < 0) {
			fprintf(stderr, "v2paths: %s\n", err);
			return 1;
		}
		for (size_t k = 0; k < n; k++) {
			atr_file *fa, *fb;
			if (atr_open(paths[k], &fa, err, sizeof err) ||
			    atr_open(paths[k], &fb, err, sizeof err)) {
				fprintf(stderr, "v2paths: %s\n", err);
				return 1;
			}
			atr_set_v2_words(fa, 1);
			uint64_t ev, ev2 = 0;
			int ok = atw_v2_paths_agree(fa, fb, &ev, err, sizeof err);
			uint64_t frames =
			    atr_get_info(fb)->version == 2 ? atr_get_info(fb)->blocks : 0;
			atr_close(fa);
			atr_close(fb);
			/* the narrow path (compact call records) against events:
			 * alone, then with frames decompressed by a helper
			 * between batches and on a thread of its own */
			uint64_t helped[3] = {0};
			for (int mode = ATW_HELP_NONE; ok && mode <= ATW_HELP_THREAD; mode++) {
				if (atr_open(paths[k], &fa, err, sizeof err) ||
				    atr_open(paths[k], &fb, err, sizeof err)) {
					fprintf(stderr, "v2paths: %s\n", err);
					return 1;
				}
				ok = atw_calls_path_agree_helped(fa, fb, mode, &ev2, &helped[mode],
								 err, sizeof err);
				atr_close(fa);
				atr_close(fb);
				if (ok && ev2 != ev) {
					snprintf(err, sizeof err,
						 "narrow path (help %d): %" PRIu64
						 " events, not %" PRIu64,
						 mode, ev2, ev);
					ok = 0;
				}
			}
			if (!ok) {
				fprintf(stderr, "v2paths: %s: %s\n", paths[k], err);
				return 1;
			}
			printf("%s: %" PRIu64 " events, %" PRIu64 " blocks, helped %" PRIu64
			       " inline %" PRIu64 " threaded\n",
			       paths[k], ev, frames, helped[ATW_HELP_INLINE],
			       helped[ATW_HELP_THREAD]);
			total += ev;
			traces++;
		}
		atr_list_free(paths, n);
	}
	printf("%" PRIu64 " events in %" PRIu64 " traces agree\n", total, traces);
	return 0;
}
