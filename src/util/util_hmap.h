/* util_hmap.h - u64 -> u64 open-addressing hash map.
 *
 * Linear probing with backward-shift deletion (no tombstones), so lookups
 * stay fast after millions of removals.  Any key is allowed, including 0.
 * Grows by doubling at 25% load while the table is small (<= 16384
 * entries, 256 KiB: short probes, few mispredicted branches), at 75% above;
 * never shrinks.  Fibonacci hashing (one multiply).  Indexes (stack id ->
 * row, thread -> waits...); live blocks have their own map, with room for a
 * pass's data and prefetching: src/liveset/lv_set.h.
 */
#ifndef UTIL_HMAP_H
#define UTIL_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct util_hmap_slot {
	uint64_t key, val;
};

struct util_hmap {
	struct util_hmap_slot *slots; /* cap entries; key 0 marks empty */
	size_t cap;		      /* power of two, or 0 */
	size_t count;		      /* keys stored, including key 0 */
	int has_zero;		      /* key 0 is stored out of line */
	uint64_t zero_val;
};

/* Zero-initialising the struct is equivalent to util_hmap_init(). */
void util_hmap_init(struct util_hmap *m);
void util_hmap_destroy(struct util_hmap *m);
void util_hmap_clear(struct util_hmap *m);
/* Reserve room for n keys without rehashing. 0, or -1 on ENOMEM. */
int util_hmap_reserve(struct util_hmap *m, size_t n);
/* Insert or replace.  Returns 1 if the key is new, 0 if it was replaced
 * (*old receives the previous value if old != NULL), -1 on ENOMEM. */
int util_hmap_insert(struct util_hmap *m, uint64_t key, uint64_t val, uint64_t *old);
/* 1 and *val filled (val may be NULL) if present, else 0. */
int util_hmap_lookup(const struct util_hmap *m, uint64_t key, uint64_t *val);
/* 1 and *val filled (val may be NULL) if the key was present and is now
 * removed, else 0. */
int util_hmap_remove(struct util_hmap *m, uint64_t key, uint64_t *val);
static inline size_t util_hmap_count(const struct util_hmap *m)
{
	return m->count;
}

#endif
