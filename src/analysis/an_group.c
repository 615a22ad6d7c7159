/* an_group.c - see an_group.h. */
#include "an_group.h"

#include <stdlib.h>
#include <string.h>

#include "util_hmap.h"

/* Frames that only pass an allocation on: the allocating function is the
 * first frame that is none of these.  Demangled and raw spellings. */
int an_group_is_wrapper(const char *n)
{
	static const char *const prefix[] = {
	    "operator new",
	    "_Znw",
	    "_Zna",
	    "__gnu_cxx::new_allocator<",
	    "std::__new_allocator<",
	    "std::allocator<",
	    "std::allocator_traits<",
	};
	/* malloc & co. by name (the loader's own, libc's internal callers),
	 * and the checking wrappers of libiberty/GCC, GLib and CPython */
	static const char *const exact[] = {"strdup",
					    "__strdup",
					    "strndup",
					    "__strndup",
					    "malloc",
					    "calloc",
					    "realloc",
					    "__libc_malloc",
					    "__libc_calloc",
					    "__libc_realloc",
					    "xmalloc",
					    "xcalloc",
					    "xrealloc",
					    "xstrdup",
					    "xstrndup",
					    "xmemdup",
					    "g_malloc",
					    "g_malloc0",
					    "g_realloc",
					    "g_try_malloc",
					    "g_try_malloc0",
					    "g_try_realloc",
					    "g_malloc_n",
					    "g_malloc0_n",
					    "g_realloc_n",
					    "g_strdup",
					    "PyMem_RawMalloc",
					    "PyMem_RawCalloc",
					    "PyMem_RawRealloc",
					    "_PyMem_RawMalloc",
					    "_PyMem_RawCalloc",
					    "_PyMem_RawRealloc",
					    "PyMem_Malloc",
					    "PyMem_Calloc",
					    "PyMem_Realloc",
					    "PyObject_Malloc",
					    "PyObject_Calloc",
					    "PyObject_Realloc",
					    "_PyObject_Malloc",
					    "_PyObject_Calloc",
					    "_PyObject_Realloc",
					    "pymalloc_alloc",
					    "_PyObject_MallocWithType"};
	if (!n)
		return 0;
	if (!strncmp(n, "__GI_", 5)) /* glibc's internal alias, as DWARF names it */
		n += 5;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(*prefix); i++)
		if (!strncmp(n, prefix[i], strlen(prefix[i]))) {
			/* the allocator classes only through their allocate() */
			return i < 3 || strstr(n, "::allocate(") != NULL;
		}
	for (size_t i = 0; i < sizeof(exact) / sizeof(*exact); i++)
		if (!strcmp(n, exact[i]))
			return 1;
	return 0;
}

static void val_add(struct an_group_val *v, const struct an_stack_stat *st)
{
	v->calls += st->calls;
	v->bytes += st->bytes;
	v->peak_bytes += st->peak_bytes;
	if (!st->suppressed) {
		v->leaked_bytes += st->live_bytes;
		v->leaked_blocks += st->live_blocks;
	}
	v->temporary += st->temporary;
}

struct gstate {
	struct an_group *g;
	struct util_hmap rows;	  /* name index -> row index */
	struct util_hmap callers; /* (row << 32 | caller name) -> caller index */
	uint32_t *seen;		  /* rows already counted for this stack */
	size_t nseen, capseen;
};

static long row_of(struct gstate *s, uint32_t name, const struct an_frame *fr)
{
	struct an_group *g = s->g;
	uint64_t idx;
	if (util_hmap_lookup(&s->rows, name, &idx))
		return (long)idx;
	if (g->nrows == g->caprows) {
		size_t nc = g->caprows ? g->caprows * 2 : 256;
		struct an_group_row *nr = realloc(g->rows, nc * sizeof(*nr));
		if (!nr)
			return -1;
		g->rows = nr;
		g->caprows = nc;
	}
	struct an_group_row *row = &g->rows[g->nrows];
	memset(row, 0, sizeof(*row));
	row->name = name;
	row->file = UINT32_MAX;
	long m = util_str_intern(&g->names, fr->module ? an_basename(fr->module) : "?");
	if (m < 0)
		return -1;
	row->module = (uint32_t)m;
	if (fr->file) {
		long fi = util_str_intern(&g->names, fr->file);
		if (fi < 0)
			return -1;
		row->file = (uint32_t)fi;
		row->line = fr->line;
	}
	if (util_hmap_insert(&s->rows, name, g->nrows, NULL) < 0)
		return -1;
	return (long)g->nrows++;
}

static int add_caller(struct gstate *s, uint32_t row, uint32_t name, const struct an_stack_stat *st)
{
	struct an_group_row *r = &s->g->rows[row];
	uint64_t key = (uint64_t)row << 32 | name, idx;
	if (!util_hmap_lookup(&s->callers, key, &idx)) {
		if (r->ncallers == r->capcallers) {
			size_t nc = r->capcallers ? r->capcallers * 2 : 4;
			struct an_group_caller *n = realloc(r->callers, nc * sizeof(*n));
			if (!n)
				return -1;
			r->callers = n;
			r->capcallers = nc;
		}
		idx = r->ncallers++;
		memset(&r->callers[idx], 0, sizeof(r->callers[idx]));
		r->callers[idx].name = name;
		if (util_hmap_insert(&s->callers, key, idx, NULL) < 0)
			return -1;
	}
	val_add(&r->callers[idx].v, st);
	return 0;
}

/* Count row once per stack in total. */
static int add_total(struct gstate *s, uint32_t row, const struct an_stack_stat *st)
{
	for (size_t i = 0; i < s->nseen; i++)
		if (s->seen[i] == row)
			return 0;
	if (s->nseen == s->capseen) {
		size_t nc = s->capseen ? s->capseen * 2 : 64;
		uint32_t *n = realloc(s->seen, nc * sizeof(*n));
		if (!n)
			return -1;
		s->seen = n;
		s->capseen = nc;
	}
	s->seen[s->nseen++] = row;
	val_add(&s->g->rows[row].total, st);
	return 0;
}

/* The name a frame is grouped under. */
static long frame_key(struct an_group *g, const struct an_frame *fr)
{
	char b[256];
	if (g->kind == AN_GROUP_MODULE)
		return util_str_intern(&g->names, fr->module ? an_basename(fr->module) : "?");
	return util_str_intern(&g->names, an_frame_name(fr, b, sizeof(b)));
}

static int one_stack(struct gstate *s, const atr_file *f, struct an_symbols *sym,
		     const struct an_stack_stat *st)
{
	struct an_group *g = s->g;
	const uint64_t *ips;
	uint32_t nf;
	s->nseen = 0;
	if (!st->stack || !atr_stack_get(f, st->stack, &ips, &nf) || nf == 0) {
		static const struct an_frame none = {.function = "[no stack recorded]"};
		long k = util_str_intern(&g->names, none.function);
		long row = k < 0 ? -1 : row_of(s, (uint32_t)k, &none);
		if (row < 0)
			return -1;
		val_add(&g->rows[row].self, st);
		return add_total(s, (uint32_t)row, st);
	}
	int state = 0; /* 0: in wrappers, 1: allocating frame found, 2: caller found */
	long alloc_row = -1;
	for (uint32_t i = 0; i < nf; i++) {
		const struct an_frame *fr;
		unsigned m = an_symbols_resolve(sym, ips[i], st->stack, &fr);
		for (unsigned j = 0; j < m; j++) {
			if (state == 0 && an_group_is_wrapper(fr[j].function) &&
			    !(i == nf - 1 && j == m - 1))
				continue;
			long k = frame_key(g, &fr[j]);
			long row = k < 0 ? -1 : row_of(s, (uint32_t)k, &fr[j]);
			if (row < 0 || add_total(s, (uint32_t)row, st) < 0)
				return -1;
			if (state == 0) {
				val_add(&g->rows[row].self, st);
				alloc_row = row;
				state = 1;
			} else if (state == 1 && g->kind == AN_GROUP_CALLER) {
				if (add_caller(s, (uint32_t)alloc_row, (uint32_t)k, st) < 0)
					return -1;
				state = 2;
			}
		}
	}
	if (state == 1 && g->kind == AN_GROUP_CALLER) {
		long k = util_str_intern(&g->names, "[top of stack]");
		if (k < 0 || add_caller(s, (uint32_t)alloc_row, (uint32_t)k, st) < 0)
			return -1;
	}
	return 0;
}

int an_group_build(struct an_group *g, enum an_group_kind kind, const atr_file *f,
		   const struct an_report *r, struct an_symbols *sym)
{
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	struct gstate s;
	memset(&s, 0, sizeof(s));
	s.g = g;
	int rc = 0;
	for (size_t i = 0; i < r->nst && rc == 0; i++) {
		const struct an_stack_stat *st = &r->st[i];
		if (!st->calls && !st->live_blocks && !st->peak_bytes)
			continue;
		g->stacks++;
		rc = one_stack(&s, f, sym, st);
	}
	util_hmap_destroy(&s.rows);
	util_hmap_destroy(&s.callers);
	free(s.seen);
	if (rc < 0)
		an_group_free(g);
	return rc;
}

void an_group_free(struct an_group *g)
{
	for (size_t i = 0; i < g->nrows; i++)
		free(g->rows[i].callers);
	free(g->rows);
	util_str_free(&g->names);
	memset(g, 0, sizeof(*g));
}

uint64_t an_group_value(const struct an_group_val *v, enum an_by by)
{
	switch (by) {
	case AN_BY_CALLS:
		return v->calls;
	case AN_BY_BYTES:
		return v->bytes;
	case AN_BY_PEAK:
		return v->peak_bytes;
	case AN_BY_LEAKED:
		return v->leaked_bytes;
	case AN_BY_TEMPORARY:
		return v->temporary;
	}
	return 0;
}

static const struct an_group *rank_g;
static enum an_by rank_by;

static int rank_cmp(const void *pa, const void *pb)
{
	const struct an_group_row *a = &rank_g->rows[*(const size_t *)pa];
	const struct an_group_row *b = &rank_g->rows[*(const size_t *)pb];
	uint64_t x = an_group_value(&a->self, rank_by), y = an_group_value(&b->self, rank_by);
	if (x != y)
		return x > y ? -1 : 1;
	x = an_group_value(&a->total, rank_by);
	y = an_group_value(&b->total, rank_by);
	if (x != y)
		return x > y ? -1 : 1;
	return strcmp(rank_g->names.s[a->name], rank_g->names.s[b->name]);
}

long an_group_rank(const struct an_group *g, enum an_by by, size_t **out)
{
	size_t *v = malloc((g->nrows ? g->nrows : 1) * sizeof(*v));
	*out = v;
	if (!v)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < g->nrows; i++)
		if (an_group_value(&g->rows[i].total, by) > 0)
			v[n++] = i;
	rank_g = g;
	rank_by = by;
	qsort(v, n, sizeof(*v), rank_cmp);
	return (long)n;
}

static int caller_cmp(const void *pa, const void *pb)
{
	const struct an_group_caller *a = pa, *b = pb;
	uint64_t x = an_group_value(&a->v, rank_by), y = an_group_value(&b->v, rank_by);
	if (x != y)
		return x > y ? -1 : 1;
	return strcmp(rank_g->names.s[a->name], rank_g->names.s[b->name]);
}

void an_group_sort_callers(struct an_group *g, enum an_by by)
{
	rank_g = g;
	rank_by = by;
	for (size_t i = 0; i < g->nrows; i++)
		if (g->rows[i].ncallers > 1)
			qsort(g->rows[i].callers, g->rows[i].ncallers, sizeof(*g->rows[i].callers),
			      caller_cmp);
}

static const char *const kind_names[] = {"stack", "function", "caller", "module"};

int an_group_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, kind_names[i]))
			return i;
	return -1;
}

const char *an_group_name(enum an_group_kind k)
{
	return (unsigned)k < 4 ? kind_names[k] : "?";
}
