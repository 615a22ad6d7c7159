/* out_dj.c - glibc dj/malloc files (docs/DJ_COMPAT.md): a dj trace for
 * dj's trace2wl, a dj workload for dj's trace_run. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "dj_trace.h"
#include "dj_workload.h"
#include "output/output.h"

int out_dj_trace_write(FILE *out, atr_file *f, struct out_dj_trace_stats *st, char *eb, size_t el)
{
	uint32_t first_tid = atr_thread_count(f) ? atr_thread(f, 0)->tid : atr_get_info(f)->pid;
	dj_trace_writer *w;
	memset(st, 0, sizeof(*st));
	if (dj_trace_writer_open(out, first_tid, &w) < 0) {
		snprintf(eb, el, "%s", atr_errstr(ATR_E_NOMEM));
		return ATR_E_NOMEM;
	}
	atr_iter *it;
	int r = atr_iter_new(f, &it);
	const struct atr_event *ev;
	if (r >= 0) {
		while ((r = atr_iter_next_ref(it, &ev)) > 0)
			if (dj_trace_writer_add(w, ev) < 0)
				break;
		atr_iter_free(it);
	}
	if (r < 0)
		snprintf(eb, el, "%s", atr_last_error(f));
	st->records = dj_trace_writer_records(w);
	st->hints = dj_trace_writer_hints(w);
	if (dj_trace_writer_close(w) < 0) {
		if (r >= 0)
			snprintf(eb, el, "write failed: %s", strerror(errno));
		r = r < 0 ? r : ATR_E_WRITE;
	}
	return r < 0 ? r : 0;
}

int out_dj_wl_write(FILE *out, awl_file *wl, struct dj_wl_stats *st, char *eb, size_t el)
{
	return dj_wl_write(wl, out, st, eb, el) < 0 ? ATR_E_IO : 0;
}
