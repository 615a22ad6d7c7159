/* util_json.h - a tiny streaming JSON writer.
 *
 * Commas and (optionally) indentation are handled by the writer:
 *
 *   struct json_writer w;
 *   json_init(&w, stdout, 1);
 *   json_begin_object(&w);
 *   json_key(&w, "pid"); json_u64(&w, 42);
 *   json_end_object(&w);
 *   json_finish(&w);     // newline
 *
 * Strings are written as valid JSON whatever their bytes: control
 * characters are escaped, invalid UTF-8 bytes become U+FFFD.
 */
#ifndef UTIL_JSON_H
#define UTIL_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json_writer {
	FILE *f;
	int pretty;
	int depth;
	int after_key;
	unsigned char count[JSON_MAX_DEPTH]; /* values written at each depth
						(saturates at 1: only "any?") */
};

void json_init(struct json_writer *w, FILE *f, int pretty);
void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);
void json_key(struct json_writer *w, const char *key);
void json_string(struct json_writer *w, const char *s);
void json_string_n(struct json_writer *w, const char *s, size_t len);
void json_u64(struct json_writer *w, uint64_t v);
void json_i64(struct json_writer *w, int64_t v);
void json_double(struct json_writer *w, double v); /* non-finite -> null */
void json_bool(struct json_writer *w, int v);
void json_null(struct json_writer *w);
/* End of a top-level value: writes a newline (JSON Lines friendly). */
void json_finish(struct json_writer *w);

/* Write s[0..len) as a quoted JSON string to f. */
void json_write_string(FILE *f, const char *s, size_t len);

#endif
