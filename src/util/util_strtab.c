/* util_strtab.c - see util_strtab.h. */
#include "util_strtab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int strtab_rehash(struct util_strtab *t, size_t nslots)
{
	uint32_t *sl = calloc(nslots, sizeof(*sl));
	if (!sl)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)str_hash(t->s[i]) & (nslots - 1);
		while (sl[h])
			h = (h + 1) & (nslots - 1);
		sl[h] = (uint32_t)(i + 1);
	}
	free(t->slots);
	t->slots = sl;
	t->nslots = nslots;
	return 0;
}

long util_str_intern(struct util_strtab *t, const char *s)
{
	if ((t->n + 1) * 2 > t->nslots && strtab_rehash(t, t->nslots ? t->nslots * 2 : 256) < 0)
		return -1;
	size_t h = (size_t)str_hash(s) & (t->nslots - 1);
	while (t->slots[h]) {
		if (!strcmp(t->s[t->slots[h] - 1], s))
			return (long)t->slots[h] - 1;
		h = (h + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		char **ns = realloc(t->s, nc * sizeof(*ns));
		if (!ns)
			return -1;
		t->s = ns;
		t->cap = nc;
	}
	char *d = strdup(s);
	if (!d)
		return -1;
	t->s[t->n] = d;
	t->slots[h] = (uint32_t)(t->n + 1);
	return (long)t->n++;
}

void util_str_free(struct util_strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
