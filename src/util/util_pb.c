/* util_pb.c - see util_pb.h. */
#include "util_pb.h"

void util_pb_raw(struct util_pb *p, const void *d, size_t n)
{
	if (util_buf_append(&p->b, d, n) < 0)
		p->nomem = 1;
}

void util_pb_varint(struct util_pb *p, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;
	do {
		t[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	util_pb_raw(p, t, n);
}

/* field with wire type 0 (varint); zero values are left out (proto3) */
void util_pb_uint(struct util_pb *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	util_pb_varint(p, (uint64_t)field << 3);
	util_pb_varint(p, v);
}

void util_pb_bytes(struct util_pb *p, unsigned field, const void *d, size_t n)
{
	util_pb_varint(p, (uint64_t)field << 3 | 2);
	util_pb_varint(p, n);
	util_pb_raw(p, d, n);
}

void util_pb_msg(struct util_pb *p, unsigned field, struct util_pb *sub)
{
	if (sub->nomem)
		p->nomem = 1;
	util_pb_bytes(p, field, sub->b.data ? sub->b.data : "", sub->b.len);
	util_buf_free(&sub->b);
	sub->b = (struct util_buf){0};
}

/* packed repeated varints */
void util_pb_packed(struct util_pb *p, unsigned field, const uint64_t *v, size_t n)
{
	struct util_pb s = {0};
	for (size_t i = 0; i < n; i++)
		util_pb_varint(&s, v[i]);
	util_pb_msg(p, field, &s);
}
