/* arenas.c - `alloctrace arenas [--json] TRACE...`: glibc arenas, heaps,
 * sbrk, mmapped chunks and thresholds (docs/ARENAS.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* optind */

#include "analysis/an_arenas.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "util_json.h"
#include "util_msg.h"

static void arenas_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace arenas [--json] TRACE...\n"
		     "glibc malloc's arenas as the trace shows them: which arena served each\n"
		     "thread and when threads moved, arenas created over time, the heaps of\n"
		     "each arena and their size, main-arena growth by sbrk, chunks served by\n"
		     "mmap, the dynamic mmap/trim thresholds, and at exit the summary of\n"
		     "glibc's malloc systemtap example (contention if recorded with --timing,\n"
		     "active arenas, heaps, total sbrk, final mmap threshold).\n"
		     "Needs a trace recorded on glibc.  See docs/ARENAS.md.\n"
		     "  --json   one JSON object per trace ({\"processes\": [...]} for several)\n");
}

static double secs(const atr_file *f, uint64_t ts)
{
	return (double)atr_ticks_to_ns_u64(f, ts) / 1e9;
}

static void arena_name(const struct an_arenas *a, int32_t i, char *buf, size_t len)
{
	if (i < 0 || (uint32_t)i >= a->narenas)
		snprintf(buf, len, "-");
	else if (a->arenas[i].main)
		snprintf(buf, len, "#0 main");
	else if (a->arenas[i].ar_ptr & 1)
		snprintf(buf, len, "#%" PRId32 " (heap 0x%" PRIx64 ", arena unknown)", i,
			 a->arenas[i].ar_ptr & ~(uint64_t)1);
	else
		snprintf(buf, len, "#%" PRId32 " 0x%" PRIx64, i, a->arenas[i].ar_ptr);
}

static uint32_t tid_of(const struct an_arenas *a, uint32_t serial)
{
	return serial && serial <= a->nthreads ? a->threads[serial - 1].tid : 0;
}

static void print_text(const atr_file *f, const struct an_arenas *a)
{
	const struct atr_info *in = atr_get_info(f);
	char n1[96], n2[96];
	printf("process %" PRIu32 "  (%s)  %s\n", in->pid, in->path, in->exe);
	printf("Arenas (%" PRIu32 "):\n", a->narenas);
	for (uint32_t i = 0; i < a->narenas; i++) {
		const struct an_arena *ar = &a->arenas[i];
		arena_name(a, (int32_t)i, n1, sizeof n1);
		printf("  %s  first used %.6f s by tid %" PRIu32 ", %" PRIu64
		       " allocations, %" PRIu32 " heap(s), threads:",
		       n1, secs(f, ar->first_ts), ar->first_tid, ar->allocs,
		       ar->main ? 1u : ar->nheaps);
		for (uint32_t k = 0; k < ar->nthreads; k++)
			printf(" %" PRIu32, tid_of(a, ar->threads[k]));
		printf("\n");
	}
	printf("Thread arena changes:\n");
	for (uint32_t i = 0; i < a->nmoves; i++) {
		const struct an_arena_move *m = &a->moves[i];
		arena_name(a, m->to, n2, sizeof n2);
		if (m->from < 0) {
			printf("  %.6f s  tid %" PRIu32 ": uses arena %s\n", secs(f, m->ts), m->tid,
			       n2);
		} else {
			arena_name(a, m->from, n1, sizeof n1);
			printf("  %.6f s  tid %" PRIu32 ": moved from arena %s to %s\n",
			       secs(f, m->ts), m->tid, n1, n2);
		}
	}
	if (a->moves_dropped)
		printf("  (%" PRIu64 " more not kept)\n", a->moves_dropped);
	printf("Heaps (%" PRIu32 "):\n", a->nheaps);
	for (uint32_t i = 0; i < a->nheaps; i++) {
		const struct an_arena_heap *h = &a->heaps[i];
		arena_name(a, (int32_t)h->arena, n1, sizeof n1);
		printf("  0x%" PRIx64 "  arena %s, first used %.6f s by tid %" PRIu32
		       ", size %" PRIu64 " bytes (highest chunk end %" PRIu64 ")\n",
		       h->start, n1, secs(f, h->first_ts), h->first_tid, h->size, h->extent);
		/* the whole list is in --json; text shows its ends */
		for (uint32_t k = 0; k < h->nsizes; k++) {
			if (h->nsizes > 8 && k == 4)
				printf("      ... %" PRIu32 " more\n", h->nsizes - 8);
			if (h->nsizes > 8 && k >= 4 && k < h->nsizes - 4)
				continue;
			printf("      %.6f s  %" PRIu64 " bytes\n", secs(f, h->sizes[k].ts),
			       h->sizes[k].v);
		}
	}
	printf("Main arena break (sbrk):\n");
	if (a->have_brk) {
		printf("  start 0x%" PRIx64 ", now 0x%" PRIx64 "\n", a->brk0, a->brk);
		for (uint32_t k = 0; k < a->nbrks; k++)
			printf("      %.6f s  %" PRId64 " bytes\n", secs(f, a->brks[k].ts),
			       (int64_t)(a->brks[k].v - a->brk0));
	} else {
		printf("  (no BRK records)\n");
	}
	printf("Mmapped chunks: %" PRIu64 " served (%" PRIu64 " bytes), %" PRIu64
	       " live at end (%" PRIu64 " bytes), peak %" PRIu64 " bytes live\n",
	       a->mmap_served, a->mmap_served_bytes, a->mmap_live, a->mmap_live_bytes,
	       a->mmap_peak_bytes);
	printf("Threshold changes:\n");
	for (uint32_t i = 0; i < a->nthresh; i++) {
		const struct an_arena_thresh *x = &a->thresh[i];
		printf("  %.6f s  %" PRIu32 ": New thresholds:: mmap: %" PRIu64
		       " bytes, trim: %" PRIu64 " bytes\n",
		       secs(f, x->ts), x->tid, x->mmap, x->trim);
	}
	if (a->thresh_dropped)
		printf("  (%" PRIu64 " more not kept)\n", a->thresh_dropped);

	printf("\nContention:%s\n", a->timing ? "" : " (not recorded: record with --timing)");
	for (uint32_t i = 0; i < a->nwaits; i++) {
		const struct an_arena_wait *w = &a->waits[i];
		arena_name(a, (int32_t)w->arena, n1, sizeof n1);
		printf("\t%" PRIu32 ": %" PRIu64 " waits (of %" PRIu64 " calls on arena %s;"
		       " > %.0f ns)\n",
		       w->tid, w->slow, w->calls, n1, atr_ticks_to_ns(f, w->limit));
	}
	if (a->timing && !a->nwaits)
		printf("\t(no arena served more than one thread)\n");
	printf("Active arenas:\n");
	for (uint32_t i = 0; i < a->nthreads; i++) {
		const struct an_arena_thr *t = &a->threads[i];
		if (t->exited || t->cur < 0)
			continue;
		arena_name(a, t->cur, n1, sizeof n1);
		printf("\t%" PRIu32 " -> %s\n", t->tid, n1);
	}
	printf("Allocated heaps:\n");
	for (uint32_t i = 0; i < a->nheaps; i++)
		if (a->heaps[i].size)
			printf("\t0x%" PRIx64 " -> %" PRIu64 " bytes\n", a->heaps[i].start,
			       a->heaps[i].size);
	printf("Total sbrk: %" PRId64 " bytes\n", a->sbrk_bytes);
	printf("Mmap threshold in the end: %" PRIu64 " kb\n", a->mmap_threshold / 1024);
}

static void print_json(struct json_writer *w, const atr_file *f, const struct an_arenas *a)
{
	const struct atr_info *in = atr_get_info(f);
	json_begin_object(w);
	json_key(w, "pid");
	json_u64(w, in->pid);
	json_key(w, "path");
	json_string(w, in->path);
	json_key(w, "arenas");
	json_begin_array(w);
	for (uint32_t i = 0; i < a->narenas; i++) {
		const struct an_arena *ar = &a->arenas[i];
		json_begin_object(w);
		json_key(w, "id");
		json_u64(w, i);
		json_key(w, "main");
		json_bool(w, ar->main);
		json_key(w, "ar_ptr");
		if (ar->main || (ar->ar_ptr & 1))
			json_null(w);
		else
			json_u64(w, ar->ar_ptr);
		json_key(w, "first_ts_s");
		json_double(w, secs(f, ar->first_ts));
		json_key(w, "first_tid");
		json_u64(w, ar->first_tid);
		json_key(w, "allocations");
		json_u64(w, ar->allocs);
		json_key(w, "threads");
		json_begin_array(w);
		for (uint32_t k = 0; k < ar->nthreads; k++)
			json_u64(w, tid_of(a, ar->threads[k]));
		json_end_array(w);
		json_key(w, "heaps");
		json_begin_array(w);
		if (ar->main && a->have_brk) {
			json_begin_object(w);
			json_key(w, "start");
			json_u64(w, a->brk0);
			json_key(w, "size");
			json_i64(w, a->sbrk_bytes);
			json_key(w, "sbrk");
			json_bool(w, 1);
			json_end_object(w);
		}
		for (uint32_t k = 0; k < ar->nheaps; k++) {
			const struct an_arena_heap *h = &a->heaps[ar->heaps[k]];
			json_begin_object(w);
			json_key(w, "start");
			json_u64(w, h->start);
			json_key(w, "size");
			json_u64(w, h->size);
			json_key(w, "extent");
			json_u64(w, h->extent);
			json_key(w, "first_ts_s");
			json_double(w, secs(f, h->first_ts));
			json_key(w, "sizes");
			json_begin_array(w);
			for (uint32_t j = 0; j < h->nsizes; j++) {
				json_begin_array(w);
				json_double(w, secs(f, h->sizes[j].ts));
				json_u64(w, h->sizes[j].v);
				json_end_array(w);
			}
			json_end_array(w);
			json_end_object(w);
		}
		json_end_array(w);
		json_end_object(w);
	}
	json_end_array(w);
	json_key(w, "threads");
	json_begin_array(w);
	for (uint32_t i = 0; i < a->nthreads; i++) {
		const struct an_arena_thr *t = &a->threads[i];
		json_begin_object(w);
		json_key(w, "serial");
		json_u64(w, t->serial);
		json_key(w, "tid");
		json_u64(w, t->tid);
		json_key(w, "exited");
		json_bool(w, t->exited);
		json_key(w, "arena");
		if (t->cur < 0)
			json_null(w);
		else
			json_u64(w, (uint64_t)t->cur);
		json_key(w, "moves");
		json_begin_array(w);
		for (uint32_t k = 0; k < a->nmoves; k++) {
			const struct an_arena_move *m = &a->moves[k];
			if (m->thread != t->serial)
				continue;
			json_begin_object(w);
			json_key(w, "ts_s");
			json_double(w, secs(f, m->ts));
			json_key(w, "from");
			if (m->from < 0)
				json_null(w);
			else
				json_u64(w, (uint64_t)m->from);
			json_key(w, "to");
			json_u64(w, (uint64_t)m->to);
			json_end_object(w);
		}
		json_end_array(w);
		json_end_object(w);
	}
	json_end_array(w);
	json_key(w, "moves_dropped");
	json_u64(w, a->moves_dropped);
	json_key(w, "allocs_maybe_tcache");
	json_u64(w, a->tcache_skipped);
	json_key(w, "sbrk_bytes");
	json_i64(w, a->sbrk_bytes);
	json_key(w, "brk_known");
	json_bool(w, a->have_brk);
	json_key(w, "sbrk");
	json_begin_array(w);
	for (uint32_t k = 0; k < a->nbrks; k++) {
		json_begin_array(w);
		json_double(w, secs(f, a->brks[k].ts));
		json_i64(w, (int64_t)(a->brks[k].v - a->brk0));
		json_end_array(w);
	}
	json_end_array(w);
	json_key(w, "mmap_threshold");
	json_u64(w, a->mmap_threshold);
	json_key(w, "trim_threshold");
	json_u64(w, a->trim_threshold);
	json_key(w, "thresholds");
	json_begin_array(w);
	for (uint32_t i = 0; i < a->nthresh; i++) {
		const struct an_arena_thresh *x = &a->thresh[i];
		json_begin_object(w);
		json_key(w, "ts_s");
		json_double(w, secs(f, x->ts));
		json_key(w, "tid");
		json_u64(w, x->tid);
		json_key(w, "chunk");
		json_u64(w, x->chunk);
		json_key(w, "mmap");
		json_u64(w, x->mmap);
		json_key(w, "trim");
		json_u64(w, x->trim);
		json_end_object(w);
	}
	json_end_array(w);
	json_key(w, "mmap_chunks");
	json_begin_object(w);
	json_key(w, "served");
	json_u64(w, a->mmap_served);
	json_key(w, "served_bytes");
	json_u64(w, a->mmap_served_bytes);
	json_key(w, "live");
	json_u64(w, a->mmap_live);
	json_key(w, "live_bytes");
	json_u64(w, a->mmap_live_bytes);
	json_key(w, "peak_live_bytes");
	json_u64(w, a->mmap_peak_bytes);
	json_end_object(w);
	json_key(w, "timing");
	json_bool(w, a->timing);
	json_key(w, "contention");
	json_begin_array(w);
	for (uint32_t i = 0; i < a->nwaits; i++) {
		const struct an_arena_wait *x = &a->waits[i];
		json_begin_object(w);
		json_key(w, "tid");
		json_u64(w, x->tid);
		json_key(w, "arena");
		json_u64(w, x->arena);
		json_key(w, "calls");
		json_u64(w, x->calls);
		json_key(w, "waits");
		json_u64(w, x->slow);
		json_key(w, "limit_ns");
		json_double(w, atr_ticks_to_ns(f, x->limit));
		json_end_object(w);
	}
	json_end_array(w);
	json_end_object(w);
}

int cmd_arenas(int argc, char **argv)
{
	int json;
	int rc = cmdu_json_args(argc, argv, "arenas", arenas_usage, &json);
	if (rc >= 0)
		return rc;
	char **all;
	size_t nall;
	if (cmdu_collect(argc - optind, argv + optind, 1, &all, &nall))
		return 1;
	struct json_writer w;
	if (json)
		cmdu_json_begin(&w, nall != 1);
	int status = 0;
	for (size_t i = 0; i < nall; i++) {
		char eb[512];
		atr_file *f = NULL;
		if (!all[i] || atr_open(all[i], &f, eb, sizeof eb) < 0) {
			util_err("%s", all[i] ? eb : "out of memory");
			status = 1;
			continue;
		}
		struct an_arenas a;
		int r = an_arenas_compute(f, &a);
		if (r == ATR_E_USAGE) {
			util_err("%s: no glibc chunk flags in this trace (recorded with another "
				 "allocator or an older alloctrace)",
				 all[i]);
			status = 1;
		} else if (r < 0) {
			util_err("%s", atr_last_error(f));
			status = 1;
		} else if (json) {
			print_json(&w, f, &a);
		} else {
			if (i)
				printf("\n");
			print_text(f, &a);
		}
		an_arenas_free(&a);
		atr_close(f);
	}
	if (json)
		cmdu_json_end(&w, nall != 1);
	atr_list_free(all, nall);
	return status;
}
