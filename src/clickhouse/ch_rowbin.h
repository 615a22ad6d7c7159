/* ch_rowbin.h - rows in ClickHouse's RowBinary format, batched.
 *
 * RowBinary: the columns of a row back to back, integers and floats
 * little-endian at their width, String as a LEB128 length and the bytes,
 * Array(T) as a LEB128 count and the elements.  A batch collects rows of one
 * table until ch_batch_full() says it is time to send (a bound on memory:
 * CH_BATCH_BYTES or CH_BATCH_ROWS, whichever comes first; the environment
 * variable ALLOCTRACE_CH_BATCH_ROWS lowers the row bound, e.g. for a server
 * with little memory); ch_batch_flush() sends it as one INSERT and empties
 * it.
 */
#ifndef CH_ROWBIN_H
#define CH_ROWBIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ch_client.h"

#define CH_BATCH_BYTES (32u << 20)
#define CH_BATCH_ROWS  (1u << 20) /* the server's max_insert_block_size */

struct ch_batch {
	const char *table, *columns;
	unsigned char *p;
	size_t len, cap;
	uint64_t rows, sent_rows, sent_bytes;
	uint64_t max_rows; /* CH_BATCH_ROWS, or $ALLOCTRACE_CH_BATCH_ROWS if smaller */
	int nomem;
};

void ch_batch_init(struct ch_batch *b, const char *table, const char *columns);
void ch_batch_free(struct ch_batch *b);
/* Room for n more bytes; 0, or -1 (b->nomem set) when out of memory. */
int ch_batch_grow(struct ch_batch *b, size_t n);
static inline int ch_batch_reserve(struct ch_batch *b, size_t n)
{
	return b->len + n <= b->cap ? 0 : ch_batch_grow(b, n);
}
static inline int ch_batch_full(const struct ch_batch *b)
{
	return b->len >= CH_BATCH_BYTES || b->rows >= b->max_rows;
}
/* Send the rows (if any) and empty the batch.  0, or -1: with ch_error(c)
 * set, or b->nomem when a put failed earlier for want of memory. */
int ch_batch_flush(struct ch_batch *b, struct ch_client *c);

/* The puts below need the room reserved first (ch_batch_reserve), except
 * the string/array ones, which reserve themselves. */
static inline void ch_put_u8(struct ch_batch *b, uint8_t v)
{
	b->p[b->len++] = v;
}
static inline void ch_put_u16(struct ch_batch *b, uint16_t v)
{
	memcpy(b->p + b->len, &v, 2); /* x86-64 and aarch64 are little-endian */
	b->len += 2;
}
static inline void ch_put_u32(struct ch_batch *b, uint32_t v)
{
	memcpy(b->p + b->len, &v, 4);
	b->len += 4;
}
static inline void ch_put_u64(struct ch_batch *b, uint64_t v)
{
	memcpy(b->p + b->len, &v, 8);
	b->len += 8;
}
static inline void ch_put_i64(struct ch_batch *b, int64_t v)
{
	ch_put_u64(b, (uint64_t)v);
}
static inline void ch_put_f64(struct ch_batch *b, double v)
{
	memcpy(b->p + b->len, &v, 8);
	b->len += 8;
}
static inline void ch_put_leb(struct ch_batch *b, uint64_t v)
{
	do {
		unsigned char c = v & 0x7f;
		v >>= 7;
		b->p[b->len++] = c | (v ? 0x80 : 0);
	} while (v);
}
/* String (NULL is ""); reserves its own room. */
void ch_put_str(struct ch_batch *b, const char *s);
void ch_put_strn(struct ch_batch *b, const char *s, size_t n);
/* Array(UInt64); reserves its own room. */
void ch_put_u64_array(struct ch_batch *b, const uint64_t *v, size_t n);

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "RowBinary is little-endian; this writer copies native integers"
#endif

#endif
