/* ch_client.h - a ClickHouse client over its HTTP interface (libcurl).
 *
 * One connection (kept alive between requests) to one server.  The URL is
 * the server's HTTP endpoint, e.g. http://127.0.0.1:8123 (user:password@
 * in it becomes HTTP basic authentication).  Statements go in the request
 * body; inserts put the INSERT statement in the URL and the RowBinary rows
 * in the body, one request per batch.  Every failure leaves a message
 * naming the server and what it said in ch_error(): the server's own
 * exception text when it answered, curl's reason when it did not.
 */
#ifndef CH_CLIENT_H
#define CH_CLIENT_H

#include <stddef.h>

#include "util_buf.h"

struct ch_client;

/* database: the default database of every statement (NULL: the server's
 * default).  NULL, with err filled, on a malformed URL or no memory. */
struct ch_client *ch_open(const char *url, const char *database, char *err, size_t errlen);
void ch_close(struct ch_client *c);

/* A setting sent with every later request (?name=value), e.g.
 * insert_distributed_sync=1.  0 or -1 (no memory). */
int ch_set(struct ch_client *c, const char *name, const char *value);

/* Run one statement.  out (may be NULL) receives the answer (TSV unless the
 * statement says FORMAT).  0, or -1 with ch_error() set. */
int ch_exec(struct ch_client *c, const char *sql, struct util_buf *out);
/* printf-style ch_exec without an answer. */
int ch_execf(struct ch_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The answer of a statement that returns one number (count(), ...).
 * 0, or -1 with ch_error() set (also when the answer is not a number). */
int ch_query_u64(struct ch_client *c, const char *sql, unsigned long long *v);

/* INSERT INTO table (columns) FORMAT RowBinary with rows[0..len) as the
 * body.  0, or -1 with ch_error() set. */
int ch_insert(struct ch_client *c, const char *table, const char *columns, const void *rows,
	      size_t len);

const char *ch_error(const struct ch_client *c);
/* The URL without credentials, for messages. */
const char *ch_url(const struct ch_client *c);

#endif
