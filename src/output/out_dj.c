/* out_dj.c - glibc dj/malloc files (docs/DJ_COMPAT.md): a dj trace for
 * dj's trace2wl, a dj workload for dj's trace_run. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "dj_trace.h"
#include "dj_workload.h"
#include "output/output.h"
#include "util_msg.h"

int out_dj_trace_write(FILE *out, atr_file *f)
{
	uint32_t first_tid = atr_thread_count(f) ? atr_thread(f, 0)->tid : atr_get_info(f)->pid;
	dj_trace_writer *w;
	if (dj_trace_writer_open(out, first_tid, &w) < 0) {
		util_err("export: out of memory");
		return -1;
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
	int rc = 0;
	if (r < 0) {
		util_err("export: %s", atr_last_error(f));
		rc = -1;
	}
	uint64_t recs = dj_trace_writer_records(w), hints = dj_trace_writer_hints(w);
	if (dj_trace_writer_close(w) < 0) {
		util_err("export: write failed: %s", strerror(errno));
		rc = -1;
	}
	if (rc == 0)
		fprintf(stderr,
			"export: dj trace: %" PRIu64 " records of %" PRIu32 " threads (pid %" PRIu32
			"), %" PRIu64 " ownership hints for dj's trace2wl\n",
			recs, atr_get_info(f)->threads, atr_get_info(f)->pid, hints);
	return rc;
}

int out_dj_wl_write(FILE *out, awl_file *wl)
{
	struct dj_wl_stats st;
	char eb[1024];
	if (dj_wl_write(wl, out, &st, eb, sizeof(eb)) < 0) {
		util_err("export: %s", eb);
		return -1;
	}
	fprintf(stderr,
		"export: dj workload: %" PRIu32 " threads, %" PRIu64 " calls, %" PRIu64
		" syncs (alloctrace's waits), %" PRIu64 " pointer slots",
		st.threads, st.calls[0], st.syncs_w, st.n_ptrs);
	if (st.dropped || st.sinks)
		fprintf(stderr,
			"; %" PRIu64 " drops not written, %" PRIu64
			" failed calls into scratch slots",
			st.dropped, st.sinks);
	fprintf(stderr, "\n");
	return 0;
}
