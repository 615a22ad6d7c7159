/* util_hmap.c - see util_hmap.h. */
#include "util_hmap.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t hmap_hash(uint64_t x)
{
	/* splitmix64 finaliser: pointers have few random low bits */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
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
	for (size_t i = 0; i < m->cap; i++) {
		uint64_t k = m->slots[i].key;
		if (!k)
			continue;
		size_t j = (size_t)hmap_hash(k) & mask;
		while (ns[j].key)
			j = (j + 1) & mask;
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int util_hmap_reserve(struct util_hmap *m, size_t n)
{
	size_t need = 16;
	while (need / 4 * 3 < n) {
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
	/* keep the table at most 3/4 full (count includes key 0: harmless) */
	if ((m->count + 1) > m->cap / 4 * 3 && util_hmap_reserve(m, m->count + 1) < 0)
		return -1;
	size_t mask = m->cap - 1;
	size_t j = (size_t)hmap_hash(key) & mask;
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
	size_t j = (size_t)hmap_hash(key) & mask;
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
	size_t j = (size_t)hmap_hash(key) & mask;
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
	size_t hole = j;
	size_t k = j;
	for (;;) {
		k = (k + 1) & mask;
		uint64_t kk = m->slots[k].key;
		if (!kk)
			break;
		size_t home = (size_t)hmap_hash(kk) & mask;
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			m->slots[hole] = m->slots[k];
			hole = k;
		}
	}
	m->slots[hole].key = 0;
	m->slots[hole].val = 0;
	return 1;
}
