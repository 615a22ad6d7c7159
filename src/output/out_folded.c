/* out_folded.c - folded stacks (flamegraph, export --format folded). */
#include "output/output.h"

#include <inttypes.h>
#include <stdlib.h>

#include "util_buf.h"

struct fold_arg {
	struct util_buf *key;
	int nomem;
};

static void fold_frame(void *arg, const struct an_frame *fr)
{
	struct fold_arg *fa = arg;
	char b[256];
	const char *name = an_frame_name(fr, b, sizeof(b));
	fa->nomem |= util_buf_puts(fa->key, ";") < 0;
	for (const char *p = name; *p; p++) {
		char ch = *p == ';' || *p == ' ' || *p == '\n' ? '_' : *p;
		fa->nomem |= util_buf_append(fa->key, &ch, 1) < 0;
	}
}

int out_fold_stacks(struct an_session *c, enum an_by by, out_fold_fn fn, void *arg)
{
	size_t *idx;
	long n = an_report_rank(&c->r, by, &idx);
	const char *exe = an_basename(atr_get_info(c->f)->exe);
	struct util_buf key = {0};
	struct fold_arg fa = {&key, 0};
	int rc = 0;
	for (long i = 0; i < n && !rc; i++) {
		const struct an_stack_stat *st = &c->r.st[idx[i]];
		const uint64_t *ips;
		uint32_t nf;
		key.len = 0;
		fa.nomem |= util_buf_puts(&key, exe && *exe ? exe : "?") < 0;
		if (!atr_stack_get(c->f, st->stack, &ips, &nf))
			fa.nomem |=
			    util_buf_puts(&key, c->r.stacks
						    ? ";[no stack]"
						    : ";[no stack: record with --stacks]") < 0;
		else
			an_session_frames_outer_first(c, st->stack, fold_frame, &fa);
		if (fa.nomem)
			rc = ATR_E_NOMEM;
		else
			rc = fn(arg, key.data, an_stack_value(st, by));
	}
	util_buf_free(&key);
	free(idx);
	return n < 0 ? ATR_E_NOMEM : rc;
}

static int print_line(void *arg, const char *key, uint64_t value)
{
	fprintf(arg, "%s %" PRIu64 "\n", key, value);
	return 0;
}

int out_print_folded(FILE *out, struct an_session *c, enum an_by by)
{
	return out_fold_stacks(c, by, print_line, out);
}

/* A name as one folded frame: ';', ' ' and newlines would split it. */
static void put_frame(FILE *out, const char *name)
{
	fputc(';', out);
	for (const char *p = name; *p; p++)
		fputc(*p == ';' || *p == ' ' || *p == '\n' ? '_' : *p, out);
}

int out_print_folded_group(FILE *out, struct an_session *c, enum an_by by, enum an_group_kind kind)
{
	struct an_group g;
	if (an_group_build(&g, kind, c->f, &c->r, c->sym) < 0)
		return ATR_E_NOMEM;
	if (kind == AN_GROUP_CALLER)
		an_group_sort_callers(&g, by);
	size_t *idx;
	long n = an_group_rank(&g, by, &idx);
	const char *exe = an_basename(atr_get_info(c->f)->exe);
	for (long i = 0; i < n; i++) {
		const struct an_group_row *row = &g.rows[idx[i]];
		const char *name = g.names.s[row->name];
		if (kind != AN_GROUP_CALLER || !row->ncallers) {
			uint64_t v = an_group_value(&row->self, by);
			if (!v)
				continue;
			fputs(exe && *exe ? exe : "?", out);
			put_frame(out, name);
			fprintf(out, " %" PRIu64 "\n", v);
			continue;
		}
		for (size_t k = 0; k < row->ncallers; k++) {
			uint64_t v = an_group_value(&row->callers[k].v, by);
			if (!v)
				continue;
			fputs(exe && *exe ? exe : "?", out);
			put_frame(out, g.names.s[row->callers[k].name]);
			put_frame(out, name);
			fprintf(out, " %" PRIu64 "\n", v);
		}
	}
	free(idx);
	an_group_free(&g);
	return n < 0 ? ATR_E_NOMEM : 0;
}
