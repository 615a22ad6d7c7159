/* atr_err.h - the one error convention of the libraries (zstd's; see
 * docs/CONTRIBUTING.md, "Errors").
 *
 * An entry point returns an int: >= 0 on success (0, or a count), a
 * negative enum atr_err on failure.  atr_isError() tests it, atr_errstr()
 * names the code; the precise message (file, offset, what was wrong) is in
 * the object (atr_last_error()) or in the caller's errbuf where no object
 * exists.  Libraries never print and never exit: commands do.
 */
#ifndef ATR_ERR_H
#define ATR_ERR_H

/* X(NAME, value, text): a new code is one line here. */
#define ATR_ERRORS(X)                                                                              \
	X(OK, 0, "no error")                                                                       \
	X(IO, -1, "I/O error") /* open/stat/mmap/read failed (errno in message) */                 \
	X(MAGIC, -2, "not an alloctrace trace")                                                    \
	X(VERSION, -3, "unsupported format version")                                               \
	X(HEADER, -4, "invalid file header") /* header fields invalid or file too short */         \
	X(FEATURES, -5, "unknown feature bits")                                                    \
	X(BLOCK, -6, "corrupt block") /* corrupt block header */                                   \
	X(RECORD, -7, "corrupt record")                                                            \
	X(NOMEM, -8, "out of memory")                                                              \
	X(NOTRACE, -9, "no trace files") /* a directory without *.atr files */                     \
	X(USAGE, -10, "bad argument")                                                              \
	X(WRITE, -11, "write error")	     /* writing an output failed */                        \
	X(PERM, -12, "not permitted")	     /* ptrace refused, ... */                             \
	X(UNSUPPORTED, -13, "not supported") /* on this architecture or build */                   \
	X(NOTFOUND, -14, "not found")	     /* no such process, allocator, ... */                 \
	X(PROCESS, -15, "process failed")    /* a child or the target process failed */

enum atr_err {
#define ATR_ERR_ENUM_(NAME, value, text) ATR_E_##NAME = value,
	ATR_ERRORS(ATR_ERR_ENUM_)
#undef ATR_ERR_ENUM_
};
#define ATR_OK ATR_E_OK

static inline int atr_isError(int ret)
{
	return ret < 0;
}
/* The code's name ("out of memory"); "unknown error" for anything else. */
const char *atr_errstr(int err);

#endif
