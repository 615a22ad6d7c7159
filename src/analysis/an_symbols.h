/* an_symbols.h - offline symbolization of recorded call stacks.
 *
 * Return addresses of a trace's STACK records are mapped to modules with
 * the trace's MODULE records (atr_module_find) and resolved with elfutils
 * libdw: the function, file:line and the chain of inlined functions.  The
 * ELF file is the module's recorded path; when it is missing or its
 * build-id differs from the recorded one, /usr/lib/debug/.build-id/xx/
 * yyyy.debug is tried.  Separate debug info (build-id or .gnu_debuglink
 * under /usr/lib/debug) is used when present.  What cannot be resolved stays
 * raw: module + offset, or the bare address.
 *
 * Without libdw (ATR_HAVE_LIBDW undefined) everything stays raw; without
 * libiberty (ATR_HAVE_LIBIBERTY) names stay mangled.
 * Results are cached per address; strings live until an_symbols_free().
 */
#ifndef AN_SYMBOLS_H
#define AN_SYMBOLS_H

#include <stdint.h>

#include "atr_reader.h"

struct an_frame {
	uint64_t ip;	      /* the return address recorded */
	const char *function; /* NULL if unknown */
	const char *file;     /* NULL if unknown */
	unsigned line;	      /* 0 if unknown */
	const char *module;   /* module path, NULL if no module holds ip */
	uint64_t offset;      /* ip - bias: the return address as an ELF virtual
				 address of the module (the call is at offset-1) */
	int inlined;	      /* 1: inlined into the frame that follows */
};

struct an_symbols;

/* How functions are named: demangled as `addr2line -C` does (libiberty's
 * cplus_demangle, DMGL_PARAMS | DMGL_ANSI; the default), raw (linkage
 * names as in the ELF and DWARF), or demangled with every template
 * argument list elided ("std::vector<>::push_back(int const&)", as
 * heaptrack's "shorten templates"). */
enum an_names { AN_NAMES_DEMANGLED, AN_NAMES_RAW, AN_NAMES_SHORT };

/* f must stay open and have atr_stacks_load() done. */
struct an_symbols *an_symbols_new(const atr_file *f);
void an_symbols_free(struct an_symbols *s);
/* Before the first an_symbols_resolve(). */
void an_symbols_set_names(struct an_symbols *s, enum an_names names);
/* "demangled" | "raw" | "short" -> enum an_names, -1 if unknown. */
int an_names_parse(const char *s);
/* Elide template argument lists in place (AN_NAMES_SHORT). */
void an_shorten_templates(char *name);

/* Frames of one return address of stack stack_id, innermost first (the
 * inlined ones, then the real function).  Returns the count (>= 1; on out
 * of memory a single raw frame from static storage is returned). */
unsigned an_symbols_resolve(struct an_symbols *s, uint64_t ip, uint32_t stack_id,
			    const struct an_frame **frames);

/* A short name for a frame: "function", else "module+0xoff", else
 * "0xaddr".  buf is used when something must be formatted. */
const char *an_frame_name(const struct an_frame *fr, char *buf, unsigned len);

/* Basename of a path (the module column). */
const char *an_basename(const char *path);

#endif
