/* out_perfetto.c - export --format perfetto: Chrome trace-event JSON
 * (ui.perfetto.dev, chrome://tracing): counter tracks for the live heap,
 * the program's own mappings (when it made any),
 * calls/s per thread and RSS, instant events for markers and control
 * calls (docs/EXPORT.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "util_json.h"

/* ---- perfetto (Chrome JSON trace events) ------------------------------------ */

static double us_of(const struct an_session *c, uint64_t ticks, double base_us)
{
	return base_us + atr_ticks_to_ns(c->f, ticks) / 1e3;
}

static void ev_begin(struct json_writer *w, const char *ph, const char *name, uint32_t pid,
		     uint32_t tid, double ts)
{
	json_begin_object(w);
	json_key(w, "ph");
	json_string(w, ph);
	json_key(w, "name");
	json_string(w, name);
	json_key(w, "pid");
	json_u64(w, pid);
	json_key(w, "tid");
	json_u64(w, tid);
	if (ts >= 0) {
		json_key(w, "ts");
		json_double(w, ts);
	}
}

static void meta_name(struct json_writer *w, const char *what, uint32_t pid, uint32_t tid,
		      const char *name)
{
	ev_begin(w, "M", what, pid, tid, -1);
	json_key(w, "args");
	json_begin_object(w);
	json_key(w, "name");
	json_string(w, name);
	json_end_object(w);
	json_end_object(w);
}

static uint32_t tid_of_serial(const struct an_session *c, uint32_t serial)
{
	for (uint32_t i = 0; i < c->r.nthreads; i++)
		if (c->r.threads[i].serial == serial)
			return c->r.threads[i].tid;
	return 0;
}

int out_perfetto_write(FILE *out, struct an_session *cs, size_t n)
{
	uint64_t t0 = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t s = atr_get_info(cs[i].f)->start_realtime_ns;
		if (s < t0)
			t0 = s;
	}
	struct json_writer w;
	json_init(&w, out, 0);
	json_begin_object(&w);
	json_key(&w, "displayTimeUnit");
	json_string(&w, "ms");
	json_key(&w, "otherData");
	json_begin_object(&w);
	json_key(&w, "generator");
	json_string(&w, "alloctrace export --format perfetto");
	json_end_object(&w);
	json_key(&w, "traceEvents");
	json_begin_array(&w);
	for (size_t i = 0; i < n; i++) {
		struct an_session *c = &cs[i];
		const struct atr_info *in = atr_get_info(c->f);
		const struct an_timeline *tl = &c->tl;
		uint32_t pid = in->pid;
		double base = (double)(in->start_realtime_ns - t0) / 1e3;
		char name[512];
		snprintf(name, sizeof(name), "%s (pid %u)", *in->exe ? an_basename(in->exe) : "?",
			 pid);
		meta_name(&w, "process_name", pid, 0, name);
		for (uint32_t k = 0; k < c->r.nthreads; k++) {
			snprintf(name, sizeof(name), "T%u", c->r.threads[k].serial);
			meta_name(&w, "thread_name", pid, c->r.threads[k].tid, name);
		}
		/* live heap: each bucket's maximum at the bucket's start, then
		 * its last value at its end (so the peak is never lost) */
		for (uint32_t k = 0; k < tl->n; k++) {
			double ts = us_of(c, (uint64_t)k * tl->width, base);
			ev_begin(&w, "C", "live heap", pid, 0, ts);
			json_key(&w, "args");
			json_begin_object(&w);
			json_key(&w, "bytes");
			json_u64(&w, tl->b[k].max);
			json_end_object(&w);
			json_end_object(&w);
		}
		if (tl->n) {
			ev_begin(&w, "C", "live heap", pid, 0, us_of(c, c->r.last_ts, base));
			json_key(&w, "args");
			json_begin_object(&w);
			json_key(&w, "bytes");
			json_u64(&w, c->r.live_bytes);
			json_end_object(&w);
			json_end_object(&w);
		}
		/* the program's own mappings (an_maps), when it made any:
		 * each bucket's maximum at its start, like the heap */
		for (uint32_t k = 0; k < tl->n && c->r.maps.peak; k++) {
			ev_begin(&w, "C", "mapped (program mmap/brk)", pid, 0,
				 us_of(c, (uint64_t)k * tl->width, base));
			json_key(&w, "args");
			json_begin_object(&w);
			json_key(&w, "bytes");
			json_u64(&w, tl->b[k].mapped_max);
			json_end_object(&w);
			json_end_object(&w);
		}
		/* calls per second: one arg (one track) per thread */
		double bucket_s = atr_ticks_to_ns(c->f, tl->width) / 1e9;
		for (uint32_t k = 0; k < tl->n && bucket_s > 0; k++) {
			ev_begin(&w, "C", "calls/s", pid, 0,
				 us_of(c, (uint64_t)k * tl->width, base));
			json_key(&w, "args");
			json_begin_object(&w);
			for (uint32_t row = 0; row < tl->nthreads; row++) {
				uint64_t cnt = an_timeline_tcalls(tl, row, k);
				int any = 0;
				for (uint32_t q = 0; q < tl->n && !any; q++)
					any = an_timeline_tcalls(tl, row, q) != 0;
				if (!any)
					continue;
				if (row == tl->nthreads - 1)
					snprintf(name, sizeof(name), "other threads");
				else
					snprintf(name, sizeof(name), "T%u", row + 1);
				json_key(&w, name);
				json_double(&w, (double)cnt / bucket_s);
			}
			json_end_object(&w);
			json_end_object(&w);
		}
		if (c->have_rss) {
			size_t stride = c->rss.n / 20000 + 1;
			for (size_t k = 0; k < c->rss.n; k += stride) {
				int64_t ns = an_session_rss_ns(c, k);
				if (ns < 0)
					continue; /* sampled before the trace began */
				ev_begin(&w, "C", "memory", pid, 0, base + (double)ns / 1e3);
				json_key(&w, "args");
				json_begin_object(&w);
				json_key(&w, "rss");
				json_u64(&w, c->rss.s[k].rss);
				json_key(&w, "vmsize");
				json_u64(&w, c->rss.s[k].vmsize);
				if (c->rss.s[k].self) {
					json_key(&w, "tracer");
					json_u64(&w, c->rss.s[k].self);
				}
				json_end_object(&w);
				json_end_object(&w);
			}
		}
		for (size_t k = 0; k < tl->nmarks; k++) {
			const struct an_tl_mark *m = &tl->marks[k];
			static const char *const ctl[] = {"?",	    "start", "stop", "pause",
							  "resume", "sync",  "exit"};
			const char *label = m->type == ATR_T_MARKER  ? m->label
					    : m->arg <= ATR_CTL_EXIT ? ctl[m->arg]
								     : "control";
			ev_begin(&w, "i", label, pid, tid_of_serial(c, m->thread),
				 us_of(c, m->ts, base));
			json_key(&w, "s");
			json_string(&w, "p");
			json_key(&w, "cat");
			json_string(&w, m->type == ATR_T_MARKER ? "marker" : "control");
			json_end_object(&w);
		}
		ev_begin(&w, "i", "peak live heap", pid, 0, us_of(c, c->r.peak_ts, base));
		json_key(&w, "s");
		json_string(&w, "p");
		json_key(&w, "args");
		json_begin_object(&w);
		json_key(&w, "bytes");
		json_u64(&w, c->r.peak_live_bytes);
		json_end_object(&w);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	json_finish(&w);
	return ferror(out) ? ATR_E_WRITE : 0;
}
