/* util_json.c - see util_json.h.  Output uses the unlocked stdio calls:
 * a writer belongs to one thread. */
#define _GNU_SOURCE
#include "util_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void json_init(struct json_writer *w, FILE *f, int pretty)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->pretty = pretty;
}

static void json_indent(struct json_writer *w)
{
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

/* Before any value or key: separator and indentation. */
static void json_pre(struct json_writer *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (w->depth > 0 && w->depth <= JSON_MAX_DEPTH) {
		if (w->count[w->depth - 1])
			fputc_unlocked(',', w->f);
		w->count[w->depth - 1] = 1;
		if (w->pretty)
			json_indent(w);
	}
}

static void json_open(struct json_writer *w, int c)
{
	json_pre(w);
	fputc_unlocked(c, w->f);
	w->depth++;
	if (w->depth <= JSON_MAX_DEPTH)
		w->count[w->depth - 1] = 0;
}

static void json_close(struct json_writer *w, int c)
{
	int had = w->depth > 0 && w->depth <= JSON_MAX_DEPTH && w->count[w->depth - 1];
	if (w->depth > 0)
		w->depth--;
	if (w->pretty && had)
		json_indent(w);
	fputc_unlocked(c, w->f);
}

void json_begin_object(struct json_writer *w)
{
	json_open(w, '{');
}

void json_end_object(struct json_writer *w)
{
	json_close(w, '}');
}

void json_begin_array(struct json_writer *w)
{
	json_open(w, '[');
}

void json_end_array(struct json_writer *w)
{
	json_close(w, ']');
}

void json_key(struct json_writer *w, const char *key)
{
	json_pre(w);
	json_write_string(w->f, key, strlen(key));
	fputs_unlocked(w->pretty ? ": " : ":", w->f);
	w->after_key = 1;
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	unsigned cp = c & (0xff >> (len + 1));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Bytes that go out unchanged: printable ASCII except '"' and '\\'. */
static inline int json_plain(unsigned c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

void json_write_string(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc_unlocked('"', f);
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && json_plain(p[j]))
			j++;
		if (j > i) {
			fwrite_unlocked(p + i, 1, j - i, f);
			i = j;
			if (i == len)
				break;
		}
		unsigned c = p[i];
		const char *esc = NULL;
		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		default:
			break;
		}
		if (esc) {
			fputs_unlocked(esc, f);
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		size_t n = utf8_len(p + i, len - i);
		if (!n) {
			fputs_unlocked("\\ufffd", f);
			i++;
			continue;
		}
		fwrite_unlocked(p + i, 1, n, f);
		i += n;
	}
	fputc_unlocked('"', f);
}

void json_string_n(struct json_writer *w, const char *s, size_t len)
{
	json_pre(w);
	json_write_string(w->f, s, len);
}

void json_string(struct json_writer *w, const char *s)
{
	json_string_n(w, s ? s : "", s ? strlen(s) : 0);
}

void json_u64(struct json_writer *w, uint64_t v)
{
	char b[24];
	char *e = b + sizeof(b), *q = e;
	json_pre(w);
	do
		*--q = (char)('0' + v % 10);
	while (v /= 10);
	fwrite_unlocked(q, 1, (size_t)(e - q), w->f);
}

void json_i64(struct json_writer *w, int64_t v)
{
	json_pre(w);
	fprintf(w->f, "%" PRId64, v);
}

void json_double(struct json_writer *w, double v)
{
	json_pre(w);
	if (!isfinite(v))
		fputs("null", w->f);
	else
		fprintf(w->f, "%.17g", v);
}

void json_bool(struct json_writer *w, int v)
{
	json_pre(w);
	fputs(v ? "true" : "false", w->f);
}

void json_null(struct json_writer *w)
{
	json_pre(w);
	fputs("null", w->f);
}

void json_finish(struct json_writer *w)
{
	fputc('\n', w->f);
	w->depth = 0;
	w->after_key = 0;
}
