/* util_hmap.c - see util_hmap.h. */
#include "util_hmap.h"

#include <stdlib.h>
#include <string.h>

/* Fibonacci (multiplicative) hashing: the home slot is the top log2(cap)
 * bits of key * 2^64/phi.  One multiply; arithmetic progressions (pointers,
 * small integers) spread evenly, and every key bit reaches the top bits.
 * The backward-shift deletion rehashes each key it moves past, so the hash
 * being this cheap matters as much as the probe itself. */
static inline size_t hmap_home(uint64_t key, unsigned shift)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> shift);
}

/* 64 - log2(cap); cap is a power of two >= 16. */
static inline unsigned hmap_shift(size_t cap)
{
	return 64u - (unsigned)__builtin_ctzll((unsigned long long)cap);
}

void util_hmap_init(struct util_hmap *m)
{
	memset(m, 0, sizeof(*m));
}

void util_hmap_destroy(struct util_hmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

void util_hmap_clear(struct util_hmap *m)
{
	if (m->slots)
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	m->count = 0;
	m->has_zero = 0;
	m->zero_val = 0;
}

static int hmap_rehash(struct util_hmap *m, size_t ncap)
{
	struct util_hmap_slot *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	size_t mask = ncap - 1;
	unsigned sh = hmap_shift(ncap);
	for (size_t i = 0; i < m->cap; i++) {
		uint64_t k = m->slots[i].key;
		if (!k)
			continue;
		size_t j = hmap_home(k, sh);
		while (ns[j].key)
			j = (j + 1) & mask;
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

/* Keys a table of cap entries holds before it grows.  Small tables (up to
 * 256 KiB, in cache) stay at most 1/4 full: probes and backward shifts
 * then mostly stop at the first slot, without a mispredicted branch
 * (convert's live set of pointers: remove 16 -> 5 ns).  Big tables, where
 * memory matters more, go to 3/4. */
#define HMAP_SMALL_CAP 16384u
static inline size_t hmap_limit(size_t cap)
{
	return cap <= HMAP_SMALL_CAP ? cap / 4 : cap / 4 * 3;
}

int util_hmap_reserve(struct util_hmap *m, size_t n)
{
	size_t need = 16;
	while (hmap_limit(need) < n) {
		if (need > SIZE_MAX / 4 / sizeof(struct util_hmap_slot))
			return -1;
		need *= 2;
	}
	if (need <= m->cap)
		return 0;
	return hmap_rehash(m, need);
}

int util_hmap_insert(struct util_hmap *m, uint64_t key, uint64_t val, uint64_t *old)
{
	if (!key) {
		int fresh = !m->has_zero;
		if (!fresh && old)
			*old = m->zero_val;
		m->has_zero = 1;
		m->zero_val = val;
		m->count += fresh;
		return fresh;
	}
	/* keep the load under hmap_limit (count includes key 0: harmless) */
	if ((m->count + 1) > hmap_limit(m->cap) && util_hmap_reserve(m, m->count + 1) < 0)
		return -1;
	size_t mask = m->cap - 1;
	size_t j = hmap_home(key, hmap_shift(m->cap));
	for (;;) {
		struct util_hmap_slot *s = &m->slots[j];
		if (s->key == key) {
			if (old)
				*old = s->val;
			s->val = val;
			return 0;
		}
		if (!s->key) {
			s->key = key;
			s->val = val;
			m->count++;
			return 1;
		}
		j = (j + 1) & mask;
	}
}

int util_hmap_lookup(const struct util_hmap *m, uint64_t key, uint64_t *val)
{
	if (!key) {
		if (m->has_zero && val)
			*val = m->zero_val;
		return m->has_zero;
	}
	if (!m->cap)
		return 0;
	size_t mask = m->cap - 1;
	size_t j = hmap_home(key, hmap_shift(m->cap));
	for (;;) {
		const struct util_hmap_slot *s = &m->slots[j];
		if (s->key == key) {
			if (val)
				*val = s->val;
			return 1;
		}
		if (!s->key)
			return 0;
		j = (j + 1) & mask;
	}
}

int util_hmap_remove(struct util_hmap *m, uint64_t key, uint64_t *val)
{
	if (!key) {
		if (!m->has_zero)
			return 0;
		if (val)
			*val = m->zero_val;
		m->has_zero = 0;
		m->zero_val = 0;
		m->count--;
		return 1;
	}
	if (!m->cap)
		return 0;
	size_t mask = m->cap - 1;
	size_t j = hmap_home(key, hmap_shift(m->cap));
	for (;;) {
		struct util_hmap_slot *s = &m->slots[j];
		if (!s->key)
			return 0;
		if (s->key == key)
			break;
		j = (j + 1) & mask;
	}
	if (val)
		*val = m->slots[j].val;
	m->count--;
	/* backward-shift: pull later members of the cluster into the hole
	 * when their home slot is not cyclically within (hole, slot]. */
	unsigned sh = hmap_shift(m->cap);
	size_t hole = j;
	size_t k = j;
	for (;;) {
		k = (k + 1) & mask;
		uint64_t kk = m->slots[k].key;
		if (!kk)
			break;
		size_t home = hmap_home(kk, sh);
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			m->slots[hole] = m->slots[k];
			hole = k;
		}
	}
	m->slots[hole].key = 0;
	m->slots[hole].val = 0;
	return 1;
}
