/* fuzz_convert.h - the converter's property check, shared by the fuzz
 * targets: convert the trace in data (through memfds) and, if that
 * succeeds, the workload written must open and pass awl_verify; abort()
 * otherwise. */
#ifndef FUZZ_CONVERT_H
#define FUZZ_CONVERT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "awl_workload.h"
#include "replay/rp_convert.h"

static inline void fuzz_convert_verify(const uint8_t *data, size_t size)
{
	int in = memfd_create("fuzz_trace", 0), out = memfd_create("fuzz_wl", 0);
	if (in < 0 || out < 0)
		abort();
	if (size && write(in, data, size) != (ssize_t)size)
		abort();
	char ip[64], op[64], eb[512];
	snprintf(ip, sizeof(ip), "/proc/self/fd/%d", in);
	snprintf(op, sizeof(op), "/proc/self/fd/%d", out);
	struct rp_convert_opts o = {.quiet = 1};
	struct rp_convert_stats st;
	if (rp_convert(ip, op, &o, &st, eb, sizeof(eb)) == 0) {
		awl_file *f;
		if (awl_open(op, &f, eb, sizeof(eb)) < 0 || awl_verify(f, eb, sizeof(eb)) < 0) {
			fprintf(stderr, "converter wrote a bad workload: %s\n", eb);
			abort();
		}
		awl_close(f);
	}
	close(in);
	close(out);
}

#endif
