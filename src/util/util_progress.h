/* util_progress.h - a progress line on stderr for long passes, only when
 * stderr is a terminal (and ALLOCTRACE_NO_PROGRESS is not set), at most
 * twice a second; util_progress_done() erases it. */
#ifndef UTIL_PROGRESS_H
#define UTIL_PROGRESS_H

#include <stdint.h>

struct util_progress {
	const char *label;
	uint64_t total; /* 0 if unknown */
	double t0, last;
	int on;
};

void util_progress_start(struct util_progress *p, const char *label, uint64_t total);
void util_progress_show(struct util_progress *p, uint64_t done);
/* Cheap to call often: it looks at the clock every 2^20 items only. */
static inline void util_progress_update(struct util_progress *p, uint64_t done)
{
	if (p->on && (done & 0xfffff) == 0)
		util_progress_show(p, done);
}
void util_progress_done(struct util_progress *p);

#endif
