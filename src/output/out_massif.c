/* out_massif.c - export --format massif: valgrind massif's out format
 * (ms_print, massif-visualizer): heap over time, the peak's and the end's
 * allocation trees (docs/EXPORT.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "util_strtab.h"

/* ---- massif ------------------------------------------------------------------ */

/* A caller tree: the root's children are the functions that called the
 * allocator, their children those functions' callers. */
struct mnode {
	uint32_t label; /* index in the string table */
	uint32_t first, next;
	uint64_t bytes;
};

struct mtree {
	struct mnode *n;
	size_t count, cap;
	struct util_strtab labels;
	int nomem;
};

static uint32_t mt_new(struct mtree *t, uint32_t label)
{
	if (t->count == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		struct mnode *nn = realloc(t->n, nc * sizeof(*nn));
		if (!nn) {
			t->nomem = 1;
			return 0;
		}
		t->n = nn;
		t->cap = nc;
	}
	t->n[t->count] = (struct mnode){label, UINT32_MAX, UINT32_MAX, 0};
	return (uint32_t)t->count++;
}

static uint32_t mt_child(struct mtree *t, uint32_t parent, uint32_t label)
{
	for (uint32_t c = t->n[parent].first; c != UINT32_MAX; c = t->n[c].next)
		if (t->n[c].label == label)
			return c;
	uint32_t c = mt_new(t, label);
	if (t->nomem)
		return 0;
	t->n[c].next = t->n[parent].first;
	t->n[parent].first = c;
	return c;
}

static void mt_build(struct mtree *t, struct an_session *c, int at_peak)
{
	mt_new(t, 0);
	for (size_t i = 0; i < c->r.nst && !t->nomem; i++) {
		const struct an_stack_stat *st = &c->r.st[i];
		uint64_t v = at_peak ? st->peak_bytes : st->live_bytes;
		if (!v)
			continue;
		t->n[0].bytes += v;
		const uint64_t *ips;
		uint32_t nf;
		uint32_t node = 0;
		if (!atr_stack_get(c->f, st->stack, &ips, &nf)) {
			long l = util_str_intern(&t->labels, "0x0: (no stack recorded)");
			node = mt_child(t, node, l < 0 ? 0 : (uint32_t)l);
			t->n[node].bytes += v;
			continue;
		}
		for (uint32_t k = 0; k < nf && !t->nomem; k++) {
			const struct an_frame *fr;
			unsigned m = an_symbols_resolve(c->sym, ips[k], st->stack, &fr);
			for (unsigned j = 0; j < m; j++) {
				char lab[1024], b[256];
				const char *name = an_frame_name(&fr[j], b, sizeof(b));
				if (fr[j].file)
					snprintf(lab, sizeof(lab), "0x%" PRIX64 ": %s (%s:%u)",
						 ips[k], name, fr[j].file, fr[j].line);
				else if (fr[j].module)
					snprintf(lab, sizeof(lab), "0x%" PRIX64 ": %s (in %s)",
						 ips[k], name, fr[j].module);
				else
					snprintf(lab, sizeof(lab), "0x%" PRIX64 ": %s", ips[k],
						 name);
				for (char *q = lab; *q; q++)
					if (*q == '\n')
						*q = ' ';
				long l = util_str_intern(&t->labels, lab);
				if (l < 0) {
					t->nomem = 1;
					break;
				}
				node = mt_child(t, node, (uint32_t)l);
				if (t->nomem)
					break;
				t->n[node].bytes += v;
			}
		}
	}
}

static struct mtree *mt_sort_tree;

static int mt_cmp(const void *a, const void *b)
{
	const struct mnode *x = &mt_sort_tree->n[*(const uint32_t *)a];
	const struct mnode *y = &mt_sort_tree->n[*(const uint32_t *)b];
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->label < y->label ? -1 : x->label > y->label;
}

static void mt_print(FILE *out, struct mtree *t, uint32_t node, unsigned depth)
{
	uint32_t nk = 0;
	for (uint32_t c = t->n[node].first; c != UINT32_MAX; c = t->n[c].next)
		nk++;
	uint32_t *kids = malloc(nk * sizeof(*kids) + 1);
	if (!kids) {
		nk = 0;
	} else {
		nk = 0;
		for (uint32_t c = t->n[node].first; c != UINT32_MAX; c = t->n[c].next)
			kids[nk++] = c;
		mt_sort_tree = t;
		qsort(kids, nk, sizeof(kids[0]), mt_cmp);
	}
	fprintf(out, "%*sn%u: %" PRIu64 " %s\n", (int)depth, "", nk, t->n[node].bytes,
		node == 0 ? "(heap allocation functions) malloc/new/new[], --alloc-fns, etc."
			  : t->labels.s[t->n[node].label]);
	for (uint32_t i = 0; i < nk; i++)
		mt_print(out, t, kids[i], depth + 1);
	free(kids);
}

static void massif_snapshot(FILE *out, unsigned num, double ms, uint64_t bytes, const char *tree,
			    struct an_session *c, int at_peak)
{
	fprintf(out,
		"#-----------\nsnapshot=%u\n#-----------\ntime=%.3f\nmem_heap_B=%" PRIu64
		"\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=%s\n",
		num, ms, bytes, tree);
	if (!strcmp(tree, "empty"))
		return;
	struct mtree t;
	memset(&t, 0, sizeof(t));
	mt_build(&t, c, at_peak);
	if (!t.nomem && t.count)
		mt_print(out, &t, 0, 0);
	else
		fprintf(out,
			"n0: %" PRIu64 " (heap allocation functions) malloc/new/new[], "
			"--alloc-fns, etc.\n",
			bytes);
	free(t.n);
	util_str_free(&t.labels);
}

int out_massif_write(FILE *out, struct an_session *c)
{
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_timeline *tl = &c->tl;
	fprintf(out, "desc: alloctrace export --format massif (requested bytes; no extra-heap or "
		     "stack data)");
	if (c->r.sample_rate)
		fprintf(out,
			" ESTIMATES from a sampled trace (one allocation per %" PRIu64 " bytes)",
			c->r.sample_rate);
	fprintf(out, "\n");
	fprintf(out, "cmd: %s\n", *in->cmdline ? in->cmdline : in->exe);
	fprintf(out, "time_unit: ms\n");
	/* up to 100 snapshots: the live bytes at the end of evenly spaced
	 * groups of buckets, the peak (detailed) in its place, the end
	 * (detailed: what leaked) */
	unsigned groups = tl->n < 98 ? tl->n : 98, num = 0;
	double peak_ms = atr_ticks_to_ns(c->f, c->r.peak_ts) / 1e6;
	int peak_done = 0;
	massif_snapshot(out, num++, 0.0, 0, "empty", c, 0);
	for (unsigned g = 0; g < groups; g++) {
		uint32_t last = (uint32_t)(((uint64_t)(g + 1) * tl->n) / groups) - 1;
		uint64_t end_ticks = (uint64_t)(last + 1) * tl->width;
		if (end_ticks > c->r.last_ts)
			end_ticks = c->r.last_ts;
		double ms = atr_ticks_to_ns(c->f, end_ticks) / 1e6;
		if (!peak_done && peak_ms <= ms) {
			massif_snapshot(out, num++, peak_ms, c->r.peak_live_bytes, "peak", c, 1);
			peak_done = 1;
		}
		if (g == groups - 1)
			break; /* the end is the detailed one below */
		massif_snapshot(out, num++, ms, tl->b[last].last, "empty", c, 0);
	}
	if (!peak_done)
		massif_snapshot(out, num++, peak_ms, c->r.peak_live_bytes, "peak", c, 1);
	massif_snapshot(out, num++, atr_ticks_to_ns(c->f, c->r.last_ts) / 1e6, c->r.live_bytes,
			"detailed", c, 0);
	return ferror(out) ? ATR_E_WRITE : 0;
}
