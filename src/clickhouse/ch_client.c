/* ch_client.c - see ch_client.h. */
#define _GNU_SOURCE
#include "ch_client.h"

#ifdef ATR_HAVE_LIBCURL
#include <curl/curl.h>
#include <dlfcn.h>
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plat_clock.h"

#ifdef ATR_HAVE_LIBCURL
/* libcurl is dlopen'ed on first use, never linked: it brings ~30 libraries
 * (TLS, HTTP/2, LDAP, ...) whose loading would slow the start of every
 * other command (record -p, first of all), and a machine without it can
 * still run everything but `load`. */
static struct {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_escape) *easy_escape;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_free) *free;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
} cu;

static int load_curl(char *err, size_t errlen)
{
	static int state; /* 0 not tried, 1 ok, -1 failed */
	static char why[256];
	if (!state) {
		void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
		if (!h)
			h = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
		state = -1;
		if (!h) {
			snprintf(why, sizeof(why),
				 "cannot load libcurl (%s): install it (Debian: libcurl4)",
				 dlerror());
		} else {
#define SYM(f, name)                                                                               \
	if (!(*(void **)&cu.f = dlsym(h, name)))                                                   \
		goto missing;
			SYM(global_init, "curl_global_init")
			SYM(easy_init, "curl_easy_init")
			SYM(easy_cleanup, "curl_easy_cleanup")
			SYM(easy_setopt, "curl_easy_setopt")
			SYM(easy_perform, "curl_easy_perform")
			SYM(easy_getinfo, "curl_easy_getinfo")
			SYM(easy_escape, "curl_easy_escape")
			SYM(easy_strerror, "curl_easy_strerror")
			SYM(free, "curl_free")
			SYM(slist_append, "curl_slist_append")
			SYM(slist_free_all, "curl_slist_free_all")
#undef SYM
			if (cu.global_init(CURL_GLOBAL_DEFAULT) != 0) {
				snprintf(why, sizeof(why), "libcurl initialisation failed");
			} else {
				state = 1;
			}
			goto done;
		missing:
			snprintf(why, sizeof(why), "libcurl lacks a function alloctrace needs: %s",
				 dlerror());
		}
	}
done:
	if (state < 0)
		snprintf(err, errlen, "%s", why);
	return state > 0 ? 0 : -1;
}

struct ch_client {
	CURL *curl;
	struct curl_slist *headers;
	char *url;		/* as given, credentials included (curl uses them) */
	char *display;		/* without credentials */
	struct util_buf params; /* "?database=...&setting=..." */
	struct util_buf answer;
	char err[1024];
	int verbose; /* $ALLOCTRACE_CH_VERBOSE: every request and its time on stderr */
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct util_buf *b = arg;
	return util_buf_append(b, p, size * n) < 0 ? 0 : size * n;
}

static int add_param(struct ch_client *c, const char *name, const char *value)
{
	char *v = cu.easy_escape(c->curl, value, 0);
	if (!v)
		return -1;
	int rc = util_buf_printf(&c->params, "%c%s=%s", c->params.len ? '&' : '?', name, v);
	cu.free(v);
	return rc;
}

/* "user:pw@host" -> "host", for messages. */
static char *strip_credentials(const char *url)
{
	const char *s = strstr(url, "://");
	const char *host = s ? s + 3 : url;
	const char *at = strchr(host, '@'), *slash = strchr(host, '/');
	if (at && (!slash || at < slash)) {
		size_t pre = (size_t)(host - url);
		char *d = malloc(strlen(url) + 1);
		if (d) {
			memcpy(d, url, pre);
			strcpy(d + pre, at + 1);
		}
		return d;
	}
	return strdup(url);
}

struct ch_client *ch_open(const char *url, const char *database, char *err, size_t errlen)
{
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		snprintf(err, errlen,
			 "clickhouse URL '%s': expected http://HOST:PORT (the HTTP interface, port "
			 "8123 by default)",
			 url);
		return NULL;
	}
	if (strchr(url, '?')) {
		snprintf(err, errlen,
			 "clickhouse URL '%s': no query string please (use --database)", url);
		return NULL;
	}
	if (load_curl(err, errlen) < 0)
		return NULL;
	struct ch_client *c = calloc(1, sizeof(*c));
	if (!c || !(c->curl = cu.easy_init()) || !(c->url = strdup(url)) ||
	    !(c->display = strip_credentials(url)) ||
	    (database && *database && add_param(c, "database", database) < 0)) {
		snprintf(err, errlen, "out of memory");
		ch_close(c);
		return NULL;
	}
	const char *v = getenv("ALLOCTRACE_CH_VERBOSE");
	c->verbose = v && *v && strcmp(v, "0");
	/* no "Expect: 100-continue" round trip before large bodies */
	c->headers = cu.slist_append(NULL, "Expect:");
	cu.easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	cu.easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	cu.easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->answer);
	cu.easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	cu.easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	cu.easy_setopt(c->curl, CURLOPT_POST, 1L);
	return c;
}

void ch_close(struct ch_client *c)
{
	if (!c)
		return;
	if (c->curl)
		cu.easy_cleanup(c->curl);
	cu.slist_free_all(c->headers);
	free(c->url);
	free(c->display);
	util_buf_free(&c->params);
	util_buf_free(&c->answer);
	free(c);
}

int ch_set(struct ch_client *c, const char *name, const char *value)
{
	return add_param(c, name, value);
}

const char *ch_error(const struct ch_client *c)
{
	return c->err;
}

const char *ch_url(const struct ch_client *c)
{
	return c->display;
}

/* The server's message without its decoration:
 * "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist., e.what() = ..." */
static void server_error(struct ch_client *c, long status)
{
	const char *t = c->answer.data ? c->answer.data : "";
	const char *s = strstr(t, "e.displayText() = ");
	size_t n;
	if (s) {
		s += strlen("e.displayText() = ");
		if (!strncmp(s, "DB::Exception: ", 15))
			s += 15;
		const char *e = strstr(s, ", e.what() = ");
		n = e ? (size_t)(e - s) : strlen(s);
	} else {
		s = t;
		n = strlen(s);
	}
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	if (n > 700)
		n = 700;
	snprintf(c->err, sizeof(c->err), "clickhouse %s: HTTP %ld: %.*s", c->display, status,
		 (int)n, s);
}

static int request(struct ch_client *c, const char *query_in_url, const void *body, size_t len)
{
	struct util_buf u = {0};
	util_buf_puts(&u, c->url);
	util_buf_append(&u, c->params.data ? c->params.data : "", c->params.len);
	if (query_in_url) {
		char *q = cu.easy_escape(c->curl, query_in_url, 0);
		if (!q || util_buf_printf(&u, "%cquery=%s", c->params.len ? '&' : '?', q) < 0) {
			cu.free(q);
			util_buf_free(&u);
			snprintf(c->err, sizeof(c->err), "out of memory");
			return -1;
		}
		cu.free(q);
	}
	if (!u.data) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return -1;
	}
	c->answer.len = 0;
	if (c->answer.data)
		c->answer.data[0] = 0;
	cu.easy_setopt(c->curl, CURLOPT_URL, u.data);
	cu.easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
	cu.easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	double t0 = c->verbose ? plat_mono_s() : 0;
	CURLcode rc = cu.easy_perform(c->curl);
	util_buf_free(&u);
	if (c->verbose) {
		const char *what = query_in_url ? query_in_url : body ? (const char *)body : "";
		fprintf(stderr, "clickhouse: %.3f s, %zu bytes sent: %.100s\n", plat_mono_s() - t0,
			len, what);
	}
	if (rc != CURLE_OK) {
		const char *hint = rc == CURLE_COULDNT_CONNECT
				       ? " (is clickhouse-server listening there?)"
				   : rc == CURLE_COULDNT_RESOLVE_HOST ? " (unknown host)"
								      : "";
		snprintf(c->err, sizeof(c->err), "clickhouse %s: %s%s", c->display,
			 cu.easy_strerror(rc), hint);
		return -1;
	}
	long status = 0;
	cu.easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		server_error(c, status);
		return -1;
	}
	return 0;
}

int ch_exec(struct ch_client *c, const char *sql, struct util_buf *out)
{
	if (request(c, NULL, sql, strlen(sql)) < 0)
		return -1;
	if (out) {
		out->len = 0;
		if (util_buf_append(out, c->answer.data ? c->answer.data : "", c->answer.len) < 0) {
			snprintf(c->err, sizeof(c->err), "out of memory");
			return -1;
		}
	}
	return 0;
}

int ch_execf(struct ch_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *sql = NULL;
	int n = vasprintf(&sql, fmt, ap);
	va_end(ap);
	if (n < 0) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return -1;
	}
	int rc = ch_exec(c, sql, NULL);
	free(sql);
	return rc;
}

int ch_query_u64(struct ch_client *c, const char *sql, unsigned long long *v)
{
	if (request(c, NULL, sql, strlen(sql)) < 0)
		return -1;
	char *end;
	errno = 0;
	*v = strtoull(c->answer.data ? c->answer.data : "", &end, 10);
	if (errno || end == c->answer.data || (*end && *end != '\n')) {
		snprintf(c->err, sizeof(c->err),
			 "clickhouse %s: expected a number from '%s', got '%.80s'", c->display, sql,
			 c->answer.data ? c->answer.data : "");
		return -1;
	}
	return 0;
}

int ch_insert(struct ch_client *c, const char *table, const char *columns, const void *rows,
	      size_t len)
{
	char q[4096];
	int n = snprintf(q, sizeof(q), "INSERT INTO %s (%s) FORMAT RowBinary", table, columns);
	if (n < 0 || (size_t)n >= sizeof(q)) {
		snprintf(c->err, sizeof(c->err), "INSERT statement too long");
		return -1;
	}
	return request(c, q, rows, len);
}

#else /* !ATR_HAVE_LIBCURL: built without libcurl (e.g. a cross build) */

struct ch_client {
	char err[64];
};

struct ch_client *ch_open(const char *url, const char *database, char *err, size_t errlen)
{
	snprintf(err, errlen, "this alloctrace was built without libcurl: no ClickHouse");
	return NULL;
}

void ch_close(struct ch_client *c)
{
	free(c);
}

int ch_set(struct ch_client *c, const char *name, const char *value)
{
	return -1;
}

int ch_exec(struct ch_client *c, const char *sql, struct util_buf *out)
{
	return -1;
}

int ch_execf(struct ch_client *c, const char *fmt, ...)
{
	return -1;
}

int ch_query_u64(struct ch_client *c, const char *sql, unsigned long long *v)
{
	return -1;
}

int ch_insert(struct ch_client *c, const char *table, const char *columns, const void *rows,
	      size_t len)
{
	return -1;
}

const char *ch_error(const struct ch_client *c)
{
	return "built without libcurl";
}

const char *ch_url(const struct ch_client *c)
{
	return "";
}
#endif
