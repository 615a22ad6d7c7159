/* an_group.h - totals per allocating function, per caller, per module
 * (report --group; heaptrack's "merged" and caller/callee views).
 *
 * Built after the an_report pass from its per-stack totals and the
 * symbolized frames (inlined functions are functions of their own):
 *   self   the stacks whose allocating function (module) is this one: the
 *          innermost frame once allocator wrappers are skipped (operator
 *          new, std::allocator's allocate, strdup; see an_group.c);
 *   total  the stacks where it appears anywhere (once per stack, so
 *          recursion does not count twice).
 * Peak values add up exactly: every stack's peak_bytes is taken at the same
 * instant (the process's peak).  Callers (AN_GROUP_CALLER): for each row,
 * the self totals split by the frame that called the allocating function.
 */
#ifndef AN_GROUP_H
#define AN_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "an_report.h"
#include "an_symbols.h"
#include "util_strtab.h"

enum an_group_kind { AN_GROUP_STACK, AN_GROUP_FUNCTION, AN_GROUP_CALLER, AN_GROUP_MODULE };

struct an_group_val {
	uint64_t calls, bytes, peak_bytes, leaked_bytes, leaked_blocks, temporary;
};

struct an_group_caller {
	uint32_t name; /* index in an_group.names */
	struct an_group_val v;
};

struct an_group_row {
	uint32_t name;	 /* function (or module basename); index in names */
	uint32_t module; /* module basename of its first frame (function rows) */
	uint32_t file;	 /* file of its first frame, UINT32_MAX if unknown */
	unsigned line;
	struct an_group_val self, total;
	struct an_group_caller *callers; /* AN_GROUP_CALLER, largest first */
	size_t ncallers, capcallers;
};

struct an_group {
	enum an_group_kind kind;
	struct an_group_row *rows;
	size_t nrows, caprows;
	struct util_strtab names;
	uint32_t stacks; /* stacks with any value */
};

/* 0, or -1 on out of memory (g is then freed).  Leaks of suppressed
 * stacks (an_stack_stat.suppressed) are left out. */
int an_group_build(struct an_group *g, enum an_group_kind kind, const atr_file *f,
		   const struct an_report *r, struct an_symbols *sym);
void an_group_free(struct an_group *g);

uint64_t an_group_value(const struct an_group_val *v, enum an_by by);
/* Row indices with self or total > 0 for by, ordered by self then total,
 * largest first (ties: name).  *out malloc'ed; count or -1. */
long an_group_rank(const struct an_group *g, enum an_by by, size_t **out);
/* Order every row's callers by by. */
void an_group_sort_callers(struct an_group *g, enum an_by by);

/* "stack" | "function" | "caller" | "module" -> kind, -1 if unknown. */
int an_group_parse(const char *s);
const char *an_group_name(enum an_group_kind k);

/* 1 if name is an allocator wrapper that an_group skips to find the
 * allocating function. */
int an_group_is_wrapper(const char *name);

#endif
