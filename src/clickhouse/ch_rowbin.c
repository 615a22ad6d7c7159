/* ch_rowbin.c - see ch_rowbin.h. */
#include "ch_rowbin.h"

#include <stdlib.h>

void ch_batch_init(struct ch_batch *b, const char *table, const char *columns)
{
	memset(b, 0, sizeof(*b));
	b->table = table;
	b->columns = columns;
	b->max_rows = CH_BATCH_ROWS;
	const char *e = getenv("ALLOCTRACE_CH_BATCH_ROWS");
	if (e && atoll(e) > 0 && (uint64_t)atoll(e) < CH_BATCH_ROWS)
		b->max_rows = (uint64_t)atoll(e);
}

void ch_batch_free(struct ch_batch *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int ch_batch_grow(struct ch_batch *b, size_t n)
{
	if (b->nomem)
		return -1;
	size_t nc = b->cap ? b->cap : 1u << 16;
	while (nc < b->len + n)
		nc *= 2;
	unsigned char *p = realloc(b->p, nc);
	if (!p) {
		b->nomem = 1;
		return -1;
	}
	b->p = p;
	b->cap = nc;
	return 0;
}

int ch_batch_flush(struct ch_batch *b, struct ch_client *c)
{
	if (b->nomem)
		return -1;
	if (!b->rows)
		return 0;
	if (ch_insert(c, b->table, b->columns, b->p, b->len) < 0)
		return -1;
	b->sent_rows += b->rows;
	b->sent_bytes += b->len;
	b->rows = 0;
	b->len = 0;
	return 0;
}

void ch_put_strn(struct ch_batch *b, const char *s, size_t n)
{
	if (ch_batch_reserve(b, n + 10) < 0)
		return;
	ch_put_leb(b, n);
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
}

void ch_put_str(struct ch_batch *b, const char *s)
{
	ch_put_strn(b, s ? s : "", s ? strlen(s) : 0);
}

void ch_put_u64_array(struct ch_batch *b, const uint64_t *v, size_t n)
{
	if (ch_batch_reserve(b, 10 + 8 * n) < 0)
		return;
	ch_put_leb(b, n);
	for (size_t i = 0; i < n; i++)
		ch_put_u64(b, v[i]);
}
