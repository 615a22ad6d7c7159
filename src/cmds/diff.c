/* diff.c - `alloctrace diff OLD NEW`: what grew and shrank between two
 * traces, by call stack.
 *
 * Stacks are matched by their symbolized frames (the folded form, outer
 * to inner: "main;c;malloc"), not by address or stack id: two runs load
 * code at different addresses and number their stacks differently.
 * Stacks of one trace that symbolize alike are added together.  Each side
 * is one process: --pid's, else the busiest of what was named (a warning
 * says which when a directory holds several).  The filters of report
 * (analysis/an_session.h) apply to both sides.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/an_report.h"
#include "analysis/an_symbols.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "analysis/an_session.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_msg.h"

#define NBY 5 /* enum an_by values */

struct side {
	const char *name;
	char **paths;
	size_t npaths;
	struct an_session c;
	int open;
};

struct entry {
	char *key;
	uint64_t v[2][NBY]; /* [old/new][by] */
};

static void diff_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace diff [--by calls|bytes|peak|leaked|temporary] [--top N] "
		"[--json] OLD NEW\n"
		"What grew and shrank from OLD to NEW, by call stack (matched by function\n"
		"names).  Default --by bytes, --top 20 (0 = all).  Text shows the\n"
		"innermost frames with template arguments elided; --json the whole stack.\n"
		"%s",
		an_session_opts_usage);
}

/* The folded key of a stack: outermost frame first, ';'-separated. */
static char *stack_key(struct side *s, uint32_t stack)
{
	const uint64_t *ips;
	uint32_t n;
	if (!atr_stack_get(s->c.f, stack, &ips, &n))
		return strdup("[no stack]");
	size_t cap = 256, len = 0;
	char *k = malloc(cap);
	if (!k)
		return NULL;
	k[0] = 0;
	for (uint32_t i = n; i-- > 0;) {
		const struct an_frame *fr;
		unsigned m = an_symbols_resolve(s->c.sym, ips[i], stack, &fr);
		for (unsigned j = m; j-- > 0;) {
			char b[256];
			const char *name = an_frame_name(&fr[j], b, sizeof(b));
			size_t l = strlen(name);
			if (len + l + 2 > cap) {
				cap = (len + l + 2) * 2;
				char *nk = realloc(k, cap);
				if (!nk) {
					free(k);
					return NULL;
				}
				k = nk;
			}
			if (len)
				k[len++] = ';';
			memcpy(k + len, name, l + 1);
			len += l;
		}
	}
	return k;
}

static int open_side(struct side *s, const struct an_session_opts *o)
{
	if (cmdu_session_list(1, (char **)&s->name, o, "diff", &s->paths, &s->npaths) ||
	    !s->npaths) {
		if (!s->npaths)
			util_err("diff: no trace in %s", s->name);
		return 1;
	}
	if (s->npaths > 1)
		util_warn("diff: %s holds %zu processes; using the busiest, %s (--pid to choose)",
			  s->name, s->npaths, s->paths[0]);
	if (cmdu_session_open(s->paths[0], &s->c, 0, o))
		return 1;
	s->open = 1;
	if (!s->c.r.stacks)
		util_warn("diff: %s was recorded without --stacks: everything is one stack "
			  "(record --stacks to compare call paths)",
			  s->paths[0]);
	return 0;
}

static void close_side(struct side *s)
{
	if (s->open)
		an_session_close(&s->c);
	if (s->paths)
		atr_list_free(s->paths, s->npaths);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

/* Entries of both sides, keys unique, values summed per side. */
static struct entry *collect(struct side *sd, size_t *count)
{
	size_t n = sd[0].c.r.nst + sd[1].c.r.nst, k = 0;
	struct entry *e = calloc(n ? n : 1, sizeof(*e));
	if (!e)
		return NULL;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < sd[s].c.r.nst; i++) {
			const struct an_stack_stat *st = &sd[s].c.r.st[i];
			if (!(e[k].key = stack_key(&sd[s], st->stack)))
				goto nomem;
			for (int b = 0; b < NBY; b++)
				e[k].v[s][b] = an_stack_value(st, (enum an_by)b);
			k++;
		}
	qsort(e, k, sizeof(*e), cmp_key);
	size_t out = 0;
	for (size_t i = 0; i < k; i++) {
		if (out && strcmp(e[out - 1].key, e[i].key) == 0) {
			for (int s = 0; s < 2; s++)
				for (int b = 0; b < NBY; b++)
					e[out - 1].v[s][b] += e[i].v[s][b];
			free(e[i].key);
			continue;
		}
		e[out++] = e[i];
	}
	*count = out;
	return e;
nomem:
	for (size_t i = 0; i < k; i++)
		free(e[i].key);
	free(e);
	return NULL;
}

static enum an_by sort_by;

static int64_t delta(const struct entry *e, enum an_by by)
{
	return (int64_t)(e->v[1][by] - e->v[0][by]);
}

/* Largest change first (absolute), then key order. */
static int cmp_delta(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int64_t dx = delta(x, sort_by), dy = delta(y, sort_by);
	uint64_t ax = dx < 0 ? (uint64_t)-dx : (uint64_t)dx,
		 ay = dy < 0 ? (uint64_t)-dy : (uint64_t)dy;
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void json_totals(struct json_writer *w, const char *name, uint64_t o, uint64_t n)
{
	json_key(w, name);
	json_begin_object(w);
	json_key(w, "old");
	json_u64(w, o);
	json_key(w, "new");
	json_u64(w, n);
	json_key(w, "delta");
	json_i64(w, (int64_t)(n - o));
	json_end_object(w);
}

static const char *fmt_val(char *b, size_t len, uint64_t v, int bytes)
{
	return bytes ? util_fmt_bytes(b, len, v) : util_fmt_u64(b, len, v);
}

static const char *fmt_delta(char *b, size_t len, int64_t d, int bytes)
{
	char t[UTIL_FMT_BUF];
	uint64_t a = d < 0 ? (uint64_t)-d : (uint64_t)d;
	snprintf(b, len, "%s%s", d < 0 ? "-" : d > 0 ? "+" : "", fmt_val(t, sizeof(t), a, bytes));
	return b;
}

static void text_total(const char *name, uint64_t o, uint64_t n, int bytes)
{
	char a[32], b[32], c[40];
	int64_t d = (int64_t)(n - o);
	printf("  %-16s %12s %12s %13s", name, fmt_val(a, sizeof(a), o, bytes),
	       fmt_val(b, sizeof(b), n, bytes), fmt_delta(c, sizeof(c), d, bytes));
	if (o)
		printf("  %+.1f%%", 100.0 * (double)d / (double)o);
	printf("\n");
}

/* A folded key for people: innermost frame first, " <- " between frames,
 * template arguments elided, at most width characters. */
static void print_short_key(const char *key, size_t width)
{
	size_t len = strlen(key), out = 0;
	char *k = strdup(key);
	if (!k) {
		printf("%.*s", (int)width, key);
		return;
	}
	for (size_t end = len; end > 0;) {
		size_t start = end;
		while (start > 0 && k[start - 1] != ';')
			start--;
		k[end] = 0;
		char *fr = k + start;
		an_shorten_templates(fr);
		size_t fl = strlen(fr);
		if (out && out + 4 + fl > width) {
			printf(" <- ...");
			break;
		}
		if (out) {
			printf(" <- ");
			out += 4;
		}
		if (fl > width)
			fl = width;
		printf("%.*s", (int)fl, fr);
		out += fl;
		end = start ? start - 1 : 0;
	}
	free(k);
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"top", required_argument, NULL, 't'},
	    {"by", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    REP_FILTER_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	int json = 0, c;
	enum an_by by = AN_BY_BYTES;
	size_t top = 20;
	struct an_session_opts ro;
	an_session_opts_init(&ro);
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "jt:b:h", opts, NULL)) != -1) {
		int k = cmdu_session_opt(&ro, c, optarg, "diff");
		if (k < 0) {
			an_session_opts_free(&ro);
			return 2;
		}
		if (k > 0)
			continue;
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 't':
			if (cmdu_parse_top(optarg, "diff", &top))
				return 2;
			break;
		case 'b': {
			int b = cmdu_parse_by(optarg, "diff");
			if (b < 0)
				return 2;
			by = (enum an_by)b;
			break;
		}
		case 'h':
			diff_usage(stdout);
			return 0;
		default:
			diff_usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		util_err("diff: needs exactly two traces, OLD and NEW");
		diff_usage(stderr);
		return 2;
	}
	struct side sd[2];
	memset(sd, 0, sizeof(sd));
	sd[0].name = argv[optind];
	sd[1].name = argv[optind + 1];
	int rc = open_side(&sd[0], &ro) || open_side(&sd[1], &ro);
	size_t n = 0;
	struct entry *e = rc ? NULL : collect(sd, &n);
	if (!rc && !e) {
		util_err("diff: out of memory");
		rc = 1;
	}
	if (!rc) {
		sort_by = by;
		qsort(e, n, sizeof(*e), cmp_delta);
		size_t shown = 0;
		const struct an_report *o = &sd[0].c.r, *nw = &sd[1].c.r;
		if (json) {
			struct json_writer w;
			json_init(&w, stdout, 1);
			json_begin_object(&w);
			json_key(&w, "old");
			json_string(&w, sd[0].paths[0]);
			json_key(&w, "new");
			json_string(&w, sd[1].paths[0]);
			json_key(&w, "by");
			json_string(&w, an_by_name(by));
			/* sampled sides (record --sample): their totals are estimates */
			json_key(&w, "old_sample_rate");
			json_u64(&w, o->sample_rate);
			json_key(&w, "new_sample_rate");
			json_u64(&w, nw->sample_rate);
			json_key(&w, "totals");
			json_begin_object(&w);
			json_totals(&w, "calls", o->total_calls, nw->total_calls);
			json_totals(&w, "bytes_requested", o->bytes_requested, nw->bytes_requested);
			json_totals(&w, "peak_live_bytes", o->peak_live_bytes, nw->peak_live_bytes);
			json_totals(&w, "leaked_bytes", o->live_bytes, nw->live_bytes);
			json_totals(&w, "temporary", o->temporary, nw->temporary);
			json_end_object(&w);
			json_key(&w, "stacks");
			json_begin_array(&w);
			for (size_t i = 0; i < n && (!top || shown < top); i++) {
				if (!delta(&e[i], by))
					break;
				json_begin_object(&w);
				json_key(&w, "stack");
				json_string(&w, e[i].key);
				json_key(&w, "old");
				json_u64(&w, e[i].v[0][by]);
				json_key(&w, "new");
				json_u64(&w, e[i].v[1][by]);
				json_key(&w, "delta");
				json_i64(&w, delta(&e[i], by));
				json_end_object(&w);
				shown++;
			}
			json_end_array(&w);
			json_end_object(&w);
			json_finish(&w);
		} else {
			for (int k = 0; k < 2; k++) {
				printf("%s: %s", k ? "new" : "old", sd[k].paths[0]);
				if (sd[k].c.r.sample_rate)
					printf(" (sampled every %" PRIu64 " bytes: estimates)",
					       sd[k].c.r.sample_rate);
				printf("\n");
			}
			printf("\n");
			printf("  %-16s %12s %12s %13s\n", "", "old", "new", "change");
			text_total("calls", o->total_calls, nw->total_calls, 0);
			text_total("bytes requested", o->bytes_requested, nw->bytes_requested, 1);
			text_total("peak live bytes", o->peak_live_bytes, nw->peak_live_bytes, 1);
			text_total("leaked bytes", o->live_bytes, nw->live_bytes, 1);
			text_total("temporary", o->temporary, nw->temporary, 0);
			int isb = by == AN_BY_BYTES || by == AN_BY_PEAK || by == AN_BY_LEAKED;
			printf(
			    "\nstacks that changed, by %s (largest change first; innermost frame "
			    "first):\n",
			    an_by_name(by));
			printf("  %13s %12s %12s  %s\n", "change", "old", "new", "stack");
			for (size_t i = 0; i < n && (!top || shown < top); i++) {
				int64_t d = delta(&e[i], by);
				if (!d)
					break;
				char a[32], b[32], dc[40];
				printf("  %13s %12s %12s  ", fmt_delta(dc, sizeof(dc), d, isb),
				       fmt_val(a, sizeof(a), e[i].v[0][by], isb),
				       fmt_val(b, sizeof(b), e[i].v[1][by], isb));
				print_short_key(e[i].key, 100);
				printf("\n");
				shown++;
			}
			size_t more = 0;
			for (size_t i = shown; i < n; i++)
				more += delta(&e[i], by) != 0;
			if (more)
				printf("  ... %zu more (--top 0 shows all)\n", more);
			if (!shown)
				printf("  (none)\n");
		}
	}
	for (size_t i = 0; i < n; i++)
		free(e[i].key);
	free(e);
	close_side(&sd[0]);
	close_side(&sd[1]);
	an_session_opts_free(&ro);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		util_err("diff: write error on standard output");
		rc = 1;
	}
	return rc;
}
