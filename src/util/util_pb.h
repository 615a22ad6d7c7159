/* util_pb.h - protobuf wire format writer: varints and length-delimited
 * fields into a growing buffer (export --format pprof).  An allocation
 * failure sets nomem and is reported once at the end. */
#ifndef UTIL_PB_H
#define UTIL_PB_H

#include <stddef.h>
#include <stdint.h>

#include "util_buf.h"

struct util_pb {
	struct util_buf b;
	int nomem;
};

void util_pb_raw(struct util_pb *p, const void *d, size_t n);
void util_pb_varint(struct util_pb *p, uint64_t v);
/* field with wire type 0 (varint); zero values are left out (proto3) */
void util_pb_uint(struct util_pb *p, unsigned field, uint64_t v);
void util_pb_bytes(struct util_pb *p, unsigned field, const void *d, size_t n);
void util_pb_msg(struct util_pb *p, unsigned field, struct util_pb *sub);
/* packed repeated varints */
void util_pb_packed(struct util_pb *p, unsigned field, const uint64_t *v, size_t n);

#endif
