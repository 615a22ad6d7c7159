/* fuzz_reader.c - libFuzzer target: any bytes through the whole reader.
 *
 * Opens the input as a buffer (exact size, so ASan sees any overread) and,
 * for inputs up to 1 MiB, also as a file through a memfd (the mmap path),
 * then runs everything `alloctrace info` does: walk, merge iteration,
 * summary.  Corrupt input must give an error code, never a crash.
 * v2 frames: the events read record by record must be the events of the
 * frames decoded whole into v1 words (atr_set_v2_words), and a frame one
 * path rejects the other rejects with the same code (same_paths()); and
 * the narrow path (atr_iter_next_calls), also with frames decompressed by
 * a helper (atr_iter_help), gives the events of
 * atr_iter_next_ref, up to the same error (atw_calls_path_agree).
 */
#define _GNU_SOURCE
#include "fuzz_reader.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/an_report.h"
#include "analysis/an_summary.h"
#include "atr_reader.h"
#include "atr_testwriter.h"

static volatile uint64_t fuzz_sink;

static void exercise(atr_file *f)
{
	const struct atr_info *in = atr_get_info(f);
	fuzz_sink += in->pid + in->threads + strlen(in->exe) + strlen(in->cmdline);
	for (uint32_t i = 0; i < atr_thread_count(f); i++)
		fuzz_sink += atr_thread(f, i)->serial;
	uint64_t n = 0;
	int r = atr_count_records(f, &n);
	if (r < 0)
		fuzz_sink += strlen(atr_last_error(f));
	atr_iter *it;
	if (atr_iter_new(f, &it) == 0) {
		struct atr_event ev;
		uint64_t prev = 0;
		int first = 1;
		while ((r = atr_iter_next(it, &ev)) > 0) {
			if (!first && ev.ts < prev)
				__builtin_trap(); /* merge order broken */
			first = 0;
			prev = ev.ts;
			fuzz_sink += atr_ticks_to_ns_u64(f, ev.ts) + ev.size + ev.duration;
			if (ev.payload_len)
				fuzz_sink += ev.payload[0] + ev.payload[ev.payload_len - 1];
			fuzz_sink += strlen(atr_type_name(ev.type));
		}
		atr_iter_free(it);
	}
	struct an_summary s;
	if (an_summary_compute(f, &s) == 0)
		fuzz_sink += s.total_calls + s.peak_live_bytes;
	an_summary_free(&s);
	/* stacks and modules (no symbolization: it would open files) */
	struct an_report rep;
	if (an_report_compute(f, &rep) == 0) {
		fuzz_sink += rep.peak_live_bytes + rep.temporary + rep.nst;
		for (size_t i = 0; i < rep.nst; i++) {
			const uint64_t *ips;
			uint32_t nf;
			if (atr_stack_get(f, rep.st[i].stack, &ips, &nf))
				for (uint32_t k = 0; k < nf; k++)
					fuzz_sink +=
					    (uint64_t)atr_module_find(f, ips[k], rep.st[i].stack);
		}
		for (size_t i = 0; i < atr_module_count(f); i++)
			fuzz_sink +=
			    strlen(atr_module_get(f, i)->path) + atr_module_get(f, i)->build_id_len;
	}
	an_report_free(&rep);
}

/* The reader's two v2 paths side by side (atw_v2_paths_agree). */
static void same_paths(const uint8_t *data, size_t size)
{
	char err[512];
	atr_file *fa, *fb;
	if (atr_open_buffer(data, size, "a.atr", &fa, err, sizeof(err)))
		return;
	if (atr_open_buffer(data, size, "b.atr", &fb, err, sizeof(err)))
		__builtin_trap(); /* opening does not depend on the path */
	atr_set_v2_words(fa, 1);
	uint64_t n;
	if (!atw_v2_paths_agree(fa, fb, &n, err, sizeof(err))) {
		fprintf(stderr, "fuzz_reader: v2 paths: %s\n", err);
		__builtin_trap();
	}
	atr_close(fa);
	atr_close(fb);
	/* the narrow path against events, on both v2 paths, and with frames
	 * decompressed by a helper between batches (pass 2) */
	for (int pass = 0; pass < 3; pass++) {
		int words = pass == 1;
		uint64_t helped;
		if (atr_open_buffer(data, size, "a.atr", &fa, err, sizeof(err)) ||
		    atr_open_buffer(data, size, "b.atr", &fb, err, sizeof(err)))
			__builtin_trap();
		atr_set_v2_words(fa, words);
		atr_set_v2_words(fb, words);
		if (!atw_calls_path_agree_helped(fa, fb,
						 pass == 2 ? ATW_HELP_INLINE : ATW_HELP_NONE, &n,
						 &helped, err, sizeof(err))) {
			fprintf(stderr, "fuzz_reader: narrow path: %s\n", err);
			__builtin_trap();
		}
		atr_close(fa);
		atr_close(fb);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	atr_file *f;
	same_paths(data, size);
	if (atr_open_buffer(data, size, "fuzz.atr", &f, err, sizeof(err)) == 0) {
		exercise(f);
		atr_close(f);
	} else {
		fuzz_sink += strlen(err);
	}
	if (size > (1u << 20))
		return 0;
	int fd = memfd_create("fuzz.atr", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (atr_open(path, &f, err, sizeof(err)) == 0) {
			uint64_t n;
			(void)atr_count_calls(f, &n);
			atr_close(f);
		}
	}
	close(fd);
	return 0;
}
