/* out_folded.c - folded stacks (flamegraph, export --format folded). */
#include "output/output.h"

#include <inttypes.h>
#include <stdlib.h>

struct fold_arg {
	FILE *out;
};

static void fold_frame(void *arg, const struct an_frame *fr)
{
	FILE *out = ((struct fold_arg *)arg)->out;
	char b[256];
	const char *name = an_frame_name(fr, b, sizeof(b));
	putc(';', out);
	for (const char *p = name; *p; p++)
		putc(*p == ';' || *p == ' ' || *p == '\n' ? '_' : *p, out);
}

void rep_print_folded(FILE *out, struct rep_ctx *c, enum an_by by)
{
	size_t *idx;
	long n = an_report_rank(&c->r, by, &idx);
	const char *exe = an_basename(atr_get_info(c->f)->exe);
	struct fold_arg fa = {out};
	for (long i = 0; i < n; i++) {
		const struct an_stack_stat *st = &c->r.st[idx[i]];
		const uint64_t *ips;
		uint32_t nf;
		fputs(exe && *exe ? exe : "?", out);
		if (!atr_stack_get(c->f, st->stack, &ips, &nf))
			fputs(c->r.stacks ? ";[no stack]" : ";[no stack: record with --stacks]", out);
		else
			rep_frames_outer_first(c, st->stack, fold_frame, &fa);
		fprintf(out, " %" PRIu64 "\n", an_stack_value(st, by));
	}
	free(idx);
}
