/* util_ranges.h - a set of disjoint ranges [start, end), each with a tag and
 * an offset, as the kernel keeps a process's mappings: a range can be cut
 * anywhere (the parts keep their tag, the offset follows the start).
 *
 * A sorted array: lookups are a binary search, an insert or a removal moves
 * the ranges above it.  Convert models the traced program's mappings with
 * it (rp_convert.c), the workload verifier each mapping slot's ranges
 * (awl_workload.c); both hold what is mapped at the moment, so memory
 * follows the live mappings.
 */
#ifndef UTIL_RANGES_H
#define UTIL_RANGES_H

#include <stddef.h>
#include <stdint.h>

struct ur_range {
	uint64_t start, end; /* start < end */
	uint64_t tag;
	uint64_t off; /* the offset of start (a part starting at x has off + x - start) */
};

struct ur_set {
	struct ur_range *v;
	size_t n, cap;
};

/* A zeroed set is empty and valid. */
void ur_destroy(struct ur_set *s);
/* Index of the first range that ends after a (n if none). */
size_t ur_first_after(const struct ur_set *s, uint64_t a);
/* Adds [start, end), which must not overlap a range of the set.  0, -1 out
 * of memory. */
int ur_insert(struct ur_set *s, uint64_t start, uint64_t end, uint64_t tag, uint64_t off);
/* Calls fn for each part of a range inside [a, b) (the part's start, end and
 * offset), in address order; with cut, then takes those parts out of the set
 * (fn sees them before).  Returns the bytes of [a, b) that were in the set,
 * or UINT64_MAX out of memory (a range split in two needs room). */
uint64_t ur_visit(struct ur_set *s, uint64_t a, uint64_t b, int cut,
		  void (*fn)(void *arg, const struct ur_range *part), void *arg);
/* 1 if [a, b) lies in ranges of tag tag whose offsets run on without a gap
 * (one contiguous piece of what was mapped as one); *off: the offset of a. */
int ur_covered(const struct ur_set *s, uint64_t a, uint64_t b, uint64_t tag, uint64_t *off);

#endif
