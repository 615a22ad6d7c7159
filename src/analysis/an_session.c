/* an_session.c - see an_session.h. */
#include "analysis/an_session.h"
#include "util_json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util_msg.h"

int rep_open(const char *path, struct rep_ctx *c, uint32_t tl_buckets)
{
	char eb[512];
	memset(c, 0, sizeof(*c));
	if (atr_open(path, &c->f, eb, sizeof(eb)) < 0) {
		util_err("%s", eb);
		return 1;
	}
	int r = 0;
	if (tl_buckets) {
		uint32_t maxser = 0;
		for (uint32_t i = 0; i < atr_thread_count(c->f); i++)
			if (atr_thread(c->f, i)->serial > maxser)
				maxser = atr_thread(c->f, i)->serial;
		if (an_timeline_init(&c->tl, tl_buckets, maxser) < 0)
			r = ATR_E_NOMEM;
		else
			c->have_tl = 1;
	}
	if (r >= 0)
		r = an_report_compute_tl(c->f, &c->r, c->have_tl ? &c->tl : NULL);
	if (r >= 0 && !(c->sym = an_symbols_new(c->f)))
		r = ATR_E_NOMEM;
	if (r < 0) {
		if (r == ATR_E_NOMEM)
			util_err("%s: out of memory", path);
		else
			util_err("%s", atr_last_error(c->f));
		rep_close(c);
		return 1;
	}
	if (tl_buckets) {
		char rp[4096];
		const struct atr_info *in = atr_get_info(c->f);
		if (atr_rss_path_for_trace(path, in->pid, rp, sizeof(rp)) == 0) {
			FILE *t = fopen(rp, "rb");
			if (t) {
				fclose(t);
				if (atr_rss_read(rp, &c->rss, eb, sizeof(eb)) < 0)
					util_warn("%s (RSS not shown)", eb);
				else
					c->have_rss = c->rss.n > 0;
			}
		}
	}
	return 0;
}

void rep_close(struct rep_ctx *c)
{
	an_symbols_free(c->sym);
	an_report_free(&c->r);
	if (c->have_tl)
		an_timeline_free(&c->tl);
	atr_rss_free(&c->rss);
	if (c->f)
		atr_close(c->f);
	memset(c, 0, sizeof(*c));
}

unsigned rep_frames_outer_first(struct rep_ctx *c, uint32_t stack, rep_frame_fn fn, void *arg)
{
	const uint64_t *ips;
	uint32_t nf;
	unsigned total = 0;
	if (!atr_stack_get(c->f, stack, &ips, &nf))
		return 0;
	for (uint32_t k = nf; k-- > 0;) {
		const struct an_frame *fr;
		unsigned m = an_symbols_resolve(c->sym, ips[k], stack, &fr);
		for (unsigned j = m; j-- > 0;) {
			fn(arg, &fr[j]);
			total++;
		}
	}
	return total;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int str_rehash(struct rep_strtab *t, size_t nslots)
{
	uint32_t *sl = calloc(nslots, sizeof(*sl));
	if (!sl)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)str_hash(t->s[i]) & (nslots - 1);
		while (sl[h])
			h = (h + 1) & (nslots - 1);
		sl[h] = (uint32_t)(i + 1);
	}
	free(t->slots);
	t->slots = sl;
	t->nslots = nslots;
	return 0;
}

long rep_str_intern(struct rep_strtab *t, const char *s)
{
	if ((t->n + 1) * 2 > t->nslots && str_rehash(t, t->nslots ? t->nslots * 2 : 256) < 0)
		return -1;
	size_t h = (size_t)str_hash(s) & (t->nslots - 1);
	while (t->slots[h]) {
		if (!strcmp(t->s[t->slots[h] - 1], s))
			return (long)t->slots[h] - 1;
		h = (h + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		char **ns = realloc(t->s, nc * sizeof(*ns));
		if (!ns)
			return -1;
		t->s = ns;
		t->cap = nc;
	}
	char *d = strdup(s);
	if (!d)
		return -1;
	t->s[t->n] = d;
	t->slots[h] = (uint32_t)(t->n + 1);
	return (long)t->n++;
}

void rep_str_free(struct rep_strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

void rep_json_ident(struct json_writer *w, struct rep_ctx *c)
{
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_report *r = &c->r;
	json_key(w, "path");
	json_string(w, in->path);
	json_key(w, "pid");
	json_u64(w, in->pid);
	json_key(w, "exe");
	json_string(w, in->exe);
	json_key(w, "cmdline");
	json_string(w, in->cmdline);
	json_key(w, "stacks_recorded");
	json_bool(w, r->stacks);
	json_key(w, "timing_recorded");
	json_bool(w, r->timing);
}

void rep_json_counts(struct json_writer *w, struct rep_ctx *c)
{
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_report *r = &c->r;
	json_key(w, "threads");
	json_u64(w, in->threads);
	json_key(w, "calls");
	json_begin_object(w);
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++) {
		json_key(w, atr_type_name(t));
		json_u64(w, r->calls[t]);
	}
	json_end_object(w);
	json_key(w, "total_calls");
	json_u64(w, r->total_calls);
	json_key(w, "bytes_requested");
	json_u64(w, r->bytes_requested);
	json_key(w, "failed_allocations");
	json_u64(w, r->failed);
	json_key(w, "unknown_frees");
	json_u64(w, r->unknown_frees);
	json_key(w, "peak_live_bytes");
	json_u64(w, r->peak_live_bytes);
}
