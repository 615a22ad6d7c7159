/* an_session.c - see an_session.h. */
#include "analysis/an_session.h"
#include "util_json.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char an_session_opts_usage[] =
    "  --names demangled|raw|short  C++ names as addr2line -C prints them (default),\n"
    "             mangled, or with template arguments elided (std::vector<>::push_back)\n"
    "  --pid PID  only that process (default: every process, the busiest first)\n"
    "  --thread T allocations of that thread: kernel tid, or T<serial> as shown\n"
    "             (repeatable)\n"
    "  --from X, --to X  allocations from/to X: seconds since the trace began,\n"
    "             or the label of an alloctrace_marker(); leaks = live at --to\n"
    "  --module M allocations with a frame in module M (basename or path)\n"
    "  --function REGEX  allocations with a frame whose function matches\n"
    "             (POSIX extended regex, searched in the demangled name)\n"
    "  --suppress FILE  leak suppressions (docs/REPORT.md, \"Suppressions\")\n";

void an_session_opts_init(struct an_session_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->pid = -1;
	o->flt.threads = o->threads;
}

void an_session_opts_free(struct an_session_opts *o)
{
	if (o->have_fre)
		regfree(&o->fre);
	for (size_t i = 0; i < o->nsupp; i++)
		free(o->supp[i]);
	free(o->supp);
	memset(o, 0, sizeof(*o));
}

/* One suppression pattern: "leak:" prefix optional; '*' wildcards; a match
 * anywhere unless anchored with '^' / '$' (LeakSanitizer's syntax). */
static int add_supp(struct an_session_opts *o, const char *line)
{
	if (!strncmp(line, "leak:", 5))
		line += 5;
	size_t n = strlen(line);
	int head = line[0] == '^', tail = n > (size_t)head && line[n - 1] == '$';
	char *p = malloc(n + 3), *w = p;
	char **ns = realloc(o->supp, (o->nsupp + 1) * sizeof(*ns));
	if (!p || !ns) {
		free(p);
		if (ns)
			o->supp = ns;
		return -1;
	}
	o->supp = ns;
	if (!head)
		*w++ = '*';
	memcpy(w, line + head, n - (size_t)head - (size_t)tail);
	w += n - (size_t)head - (size_t)tail;
	if (!tail)
		*w++ = '*';
	*w = 0;
	o->supp[o->nsupp++] = p;
	return 0;
}

static int read_supp(struct an_session_opts *o, const char *path, char *eb, size_t el)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(eb, el, "--suppress %s: %s", path, strerror(errno));
		return ATR_E_IO;
	}
	char line[4096];
	unsigned no = 0;
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		no++;
		char *p = line + strspn(line, " \t");
		size_t n = strcspn(p, "\r\n");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		p[n] = 0;
		if (!*p || *p == '#')
			continue;
		if (strchr(p, ':') && strncmp(p, "leak:", 5)) {
			snprintf(eb, el, "%s:%u: only \"leak:\" suppressions are known: '%s'", path,
				 no, p);
			rc = ATR_E_USAGE;
		} else if (!strcmp(p, "leak:") || add_supp(o, p) < 0) {
			snprintf(eb, el, "%s:%u: empty pattern or out of memory", path, no);
			rc = ATR_E_USAGE;
		}
	}
	fclose(f);
	return rc;
}

static void parse_when(const char *arg, double *sec, const char **label)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (end != arg && !*end && !errno && v >= 0) {
		*sec = v;
		*label = NULL;
	} else {
		*label = arg;
	}
}

int an_session_opt(struct an_session_opts *o, int c, const char *arg, char *eb, size_t el)
{
	if (c < REP_OPT_BASE || c > REP_OPT_BASE + 8)
		return 0;
	char *end;
	switch (c - REP_OPT_BASE) {
	case 0: {
		int n = an_names_parse(arg);
		if (n < 0) {
			snprintf(eb, el, "unknown --names '%s' (demangled, raw, short)", arg);
			return ATR_E_USAGE;
		}
		o->names = (enum an_names)n;
		return 1;
	}
	case 1: {
		unsigned long v = strtoul(arg, &end, 10);
		if (*end || end == arg || v > 0x7fffffffUL) {
			snprintf(eb, el, "bad --pid '%s'", arg);
			return ATR_E_USAGE;
		}
		o->pid = (long)v;
		return 1;
	}
	case 2: {
		int serial = arg[0] == 'T' || arg[0] == 't';
		unsigned long v = strtoul(arg + serial, &end, 10);
		if (*end || end == arg + serial || v == 0 || v >= AN_FILTER_SERIAL ||
		    o->flt.nthreads == sizeof(o->threads) / sizeof(*o->threads)) {
			snprintf(eb, el, "bad --thread '%s' (a tid, or T<serial>)", arg);
			return ATR_E_USAGE;
		}
		o->threads[o->flt.nthreads++] = (uint32_t)v | (serial ? AN_FILTER_SERIAL : 0);
		o->any_filter = 1;
		return 1;
	}
	case 3:
		o->flt.have_from = 1;
		o->any_filter = 1;
		parse_when(arg, &o->flt.from_s, &o->flt.from_label);
		return 1;
	case 4:
		o->flt.have_to = 1;
		o->any_filter = 1;
		parse_when(arg, &o->flt.to_s, &o->flt.to_label);
		return 1;
	case 5:
		o->module = arg;
		o->any_filter = 1;
		return 1;
	case 6: {
		if (o->have_fre)
			regfree(&o->fre);
		int e = regcomp(&o->fre, arg, REG_EXTENDED | REG_NOSUB);
		if (e) {
			char why[256];
			regerror(e, &o->fre, why, sizeof(why));
			snprintf(eb, el, "bad --function '%s': %s", arg, why);
			o->have_fre = 0;
			return ATR_E_USAGE;
		}
		o->have_fre = 1;
		o->any_filter = 1;
		return 1;
	}
	case 7: {
		int r = read_supp(o, arg, eb, el);
		return r < 0 ? r : 1;
	}
	case 8: {
		int g = an_group_parse(arg);
		if (g < 0) {
			snprintf(eb, el, "unknown --group '%s' (stack, function, caller, module)",
				 arg);
			return ATR_E_USAGE;
		}
		o->group = (enum an_group_kind)g;
		return 1;
	}
	}
	return 0;
}

struct busy {
	char *path;
	uint64_t records;
	uint32_t pid;
};

static int busy_cmp(const void *pa, const void *pb)
{
	const struct busy *a = pa, *b = pb;
	if (a->records != b->records)
		return a->records > b->records ? -1 : 1;
	return strcmp(a->path, b->path);
}

int an_session_list(int argc, char **argv, const struct an_session_opts *o, char ***paths,
		    size_t *n, an_session_msg_fn bad, void *arg)
{
	struct busy *v = NULL;
	size_t nv = 0;
	int rc = 0;
	*paths = NULL;
	*n = 0;
	for (int a = 0; a < argc; a++) {
		char **p;
		size_t np;
		char eb[512];
		int r = atr_list(argv[a], &p, &np, eb, sizeof(eb));
		if (r < 0) {
			bad(arg, eb);
			rc = rc < 0 ? rc : r;
			continue;
		}
		struct busy *nb = realloc(v, (nv + np + 1) * sizeof(*nb));
		if (!nb) {
			atr_list_free(p, np);
			rc = ATR_E_NOMEM;
			break;
		}
		v = nb;
		for (size_t i = 0; i < np; i++) {
			atr_file *f;
			v[nv].path = p[i];
			v[nv].records = 0;
			v[nv].pid = 0;
			if (atr_open(p[i], &f, eb, sizeof(eb)) == 0) {
				/* the block headers' count misses the staging
				 * blocks: small traces are counted exactly */
				v[nv].records = atr_get_info(f)->records_hint;
				if (v[nv].records < 1000000)
					atr_count_records(f, &v[nv].records);
				v[nv].pid = atr_get_info(f)->pid;
				atr_close(f);
			}
			if (o && o->pid >= 0 && v[nv].pid != (uint32_t)o->pid)
				free(p[i]);
			else
				nv++;
		}
		free(p);
	}
	if (o && o->pid >= 0 && nv == 0 && rc == 0)
		rc = ATR_E_NOTFOUND;
	qsort(v, nv, sizeof(*v), busy_cmp);
	char **out = malloc((nv ? nv : 1) * sizeof(*out));
	if (!out) {
		for (size_t i = 0; i < nv; i++)
			free(v[i].path);
		free(v);
		return ATR_E_NOMEM;
	}
	for (size_t i = 0; i < nv; i++)
		out[i] = v[i].path;
	free(v);
	*paths = out;
	*n = nv;
	return rc;
}

/* an_filter.stack_ok: --module and --function. */
struct match_arg {
	const struct an_session_opts *o;
	int module_hit, function_hit;
};

static void match_frame(void *arg, const struct an_frame *fr)
{
	struct match_arg *m = arg;
	if (m->o->module && fr->module &&
	    (!strcmp(fr->module, m->o->module) || !strcmp(an_basename(fr->module), m->o->module)))
		m->module_hit = 1;
	char b[256];
	if (m->o->have_fre && !m->function_hit &&
	    regexec(&m->o->fre, an_frame_name(fr, b, sizeof(b)), 0, NULL, 0) == 0)
		m->function_hit = 1;
}

static int stack_ok(void *arg, uint32_t stack)
{
	struct an_session *c = arg;
	struct match_arg m = {c->o, 0, 0};
	an_session_frames_outer_first(c, stack, match_frame, &m);
	return (!c->o->module || m.module_hit) && (!c->o->have_fre || m.function_hit);
}

int an_session_stack_selected(struct an_session_stack_cache *k, atr_file *f, uint32_t stack)
{
	size_t i;
	for (i = 0; i < k->n && k->ctx[i].f != f; i++)
		;
	if (i == k->n) {
		struct an_session *n = realloc(k->ctx, (k->n + 1) * sizeof(*n));
		if (n)
			k->ctx = n;
		struct util_hmap *m = n ? realloc(k->memo, (k->n + 1) * sizeof(*m)) : NULL;
		if (!m)
			return 1; /* keeps it: never drops for want of memory */
		k->memo = m;
		memset(&n[i], 0, sizeof(n[i]));
		memset(&m[i], 0, sizeof(m[i]));
		n[i].f = f;
		n[i].o = k->o;
		n[i].sym = an_symbols_new(f);
		if (n[i].sym)
			an_symbols_set_names(n[i].sym, k->o->names);
		k->n++;
	}
	uint64_t v;
	/* key 0 is the table's empty mark: stack + 1 */
	if (util_hmap_lookup(&k->memo[i], (uint64_t)stack + 1, &v))
		return (int)v - 1;
	int ok = !k->ctx[i].sym || stack_ok(&k->ctx[i], stack);
	util_hmap_insert(&k->memo[i], (uint64_t)stack + 1, (uint64_t)ok + 1, NULL);
	return ok;
}

void an_session_stack_cache_free(struct an_session_stack_cache *k)
{
	for (size_t i = 0; i < k->n; i++) {
		an_symbols_free(k->ctx[i].sym);
		util_hmap_destroy(&k->memo[i]);
	}
	free(k->ctx);
	free(k->memo);
	k->ctx = NULL;
	k->memo = NULL;
	k->n = 0;
}

struct supp_arg {
	const struct an_session_opts *o;
	int hit;
};

static void supp_frame(void *arg, const struct an_frame *fr)
{
	struct supp_arg *m = arg;
	char b[256];
	const char *name = an_frame_name(fr, b, sizeof(b));
	for (size_t i = 0; i < m->o->nsupp && !m->hit; i++) {
		const char *p = m->o->supp[i];
		m->hit = !fnmatch(p, name, 0) ||
			 (fr->module && !fnmatch(p, an_basename(fr->module), 0)) ||
			 (fr->file && !fnmatch(p, fr->file, 0));
	}
}

/* Mark the leaking stacks a suppression matches. */
static void apply_supp(struct an_session *c)
{
	for (size_t i = 0; i < c->r.nst; i++) {
		struct an_stack_stat *st = &c->r.st[i];
		if (!st->live_blocks)
			continue;
		struct supp_arg m = {c->o, 0};
		an_session_frames_outer_first(c, st->stack, supp_frame, &m);
		if (m.hit) {
			st->suppressed = 1;
			c->supp_bytes += st->live_bytes;
			c->supp_blocks += st->live_blocks;
		}
	}
}

/* A note for the command (an_session_warning()); the first few are kept. */
static void add_warning(struct an_session *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_warning(struct an_session *c, const char *fmt, ...)
{
	if (c->nwarn == AN_SESSION_MAXWARN)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->warn[c->nwarn++], sizeof(c->warn[0]), fmt, ap);
	va_end(ap);
}

int an_session_open(const char *path, struct an_session *c, uint32_t tl_buckets,
		    const struct an_session_opts *o, char *errbuf, size_t errlen)
{
	char eb[512];
	memset(c, 0, sizeof(*c));
	c->o = o;
	int r = atr_open(path, &c->f, errbuf, errlen);
	if (r < 0)
		return r;
	/* stacks and symbols first: the pass's --function/--module filter
	 * resolves frames */
	r = atr_stacks_load(c->f);
	if (r >= 0 && !(c->sym = an_symbols_new(c->f)))
		r = ATR_E_NOMEM;
	else if (r >= 0 && o)
		an_symbols_set_names(c->sym, o->names);
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
	struct an_filter flt;
	if (o) {
		flt = o->flt;
		if (o->module || o->have_fre) {
			flt.stack_ok = stack_ok;
			flt.stack_arg = c;
		}
	}
	if (r >= 0)
		r = an_report_compute_filtered(c->f, &c->r, c->have_tl ? &c->tl : NULL,
					       o && o->any_filter ? &flt : NULL);
	if (r >= 0 && o && o->nsupp)
		apply_supp(c);
	if (r >= 0 && o && o->flt.have_from && o->flt.from_label && !c->r.window_open)
		add_warning(c, "%s: no marker '%s' (--from): nothing selected", path,
			    o->flt.from_label);
	if (r >= 0 && o && o->flt.have_to && o->flt.to_label && !c->r.window_closed)
		add_warning(c, "%s: no marker '%s' (--to): selected up to the end", path,
			    o->flt.to_label);
	if (r < 0) {
		if (r == ATR_E_NOMEM)
			snprintf(errbuf, errlen, "%s: out of memory", path);
		else
			snprintf(errbuf, errlen, "%s", atr_last_error(c->f));
		an_session_close(c);
		return r;
	}
	if (tl_buckets) {
		char rp[4096];
		const struct atr_info *in = atr_get_info(c->f);
		if (atr_rss_path_for_trace(path, in->pid, rp, sizeof(rp)) == 0) {
			FILE *t = fopen(rp, "rb");
			if (t) {
				fclose(t);
				if (atr_rss_read(rp, &c->rss, eb, sizeof(eb)) < 0)
					add_warning(c, "%s (RSS not shown)", eb);
				else
					c->have_rss = c->rss.n > 0;
			}
		}
	}
	return 0;
}

int an_session_rss_account(const struct an_session *c, struct an_session_account *a)
{
	memset(a, 0, sizeof *a);
	if (!c->have_rss || !c->have_tl || !c->tl.n || !c->rss.n)
		return -1;
	/* the program's peak, not the tracer's */
	size_t best = 0;
	for (size_t i = 1; i < c->rss.n; i++)
		if (atr_rss_program(&c->rss.s[i]) > atr_rss_program(&c->rss.s[best]))
			best = i;
	int64_t ns = an_session_rss_ns(c, best);
	a->t_ns = ns > 0 ? (uint64_t)ns : 0;
	/* the bucket holding that moment (the last one if the sample came
	 * after the last record) */
	double ticks = (double)a->t_ns * atr_get_info(c->f)->ticks_per_sec / 1e9;
	double k = ticks / (double)c->tl.width;
	const struct an_tl_bucket *b = &c->tl.b[k >= c->tl.n ? c->tl.n - 1 : (uint32_t)k];
	a->rss = c->rss.s[best].rss;
	a->tracer = a->rss - atr_rss_program(&c->rss.s[best]);
	a->heap = b->last;
	a->mapped = b->mapped_last;
	a->rest = (int64_t)a->rss - (int64_t)a->heap - (int64_t)a->mapped - (int64_t)a->tracer;
	return 0;
}

void an_session_close(struct an_session *c)
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

unsigned an_session_frames_outer_first(struct an_session *c, uint32_t stack, an_session_frame_fn fn,
				       void *arg)
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

void an_session_json_ident(struct json_writer *w, struct an_session *c)
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
	/* sampled (record --sample): every count and byte total is an estimate */
	json_key(w, "sample_rate");
	json_u64(w, r->sample_rate);
	json_key(w, "estimated");
	json_bool(w, r->sample_rate != 0);
}

void an_session_json_counts(struct json_writer *w, struct an_session *c)
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
	json_key(w, "reordered_releases");
	json_u64(w, r->reordered_releases);
	json_key(w, "peak_live_bytes");
	json_u64(w, r->peak_live_bytes);
}
