/* an_maps.h - the program's own mappings over a trace (ATR_XCALLS).
 *
 * Fed every event in global order (an_maps_event), it keeps the address
 * ranges the program and its libraries mapped with mmap/mremap and not
 * yet unmapped, as disjoint page-rounded ranges: munmap and MAP_FIXED cut
 * pieces out, mremap moves a range (keeping the stack that mapped it).
 * The program's own brk/sbrk moves are counted apart (brk_bytes: net
 * growth, never below 0).  glibc's malloc maps through internal symbols,
 * so none of this is heap.  Memory is bounded by the live mappings and the
 * distinct stacks, never by the trace.
 *
 * "mapped" = bytes of live ranges + brk_bytes: address space, not RSS
 * (pages never touched are not resident).
 */
#ifndef AN_MAPS_H
#define AN_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "atr_reader.h"

#define AN_MAPS_PAGE 4096u /* lengths round up to this (the kernel's) */

struct an_map_range {
	uint64_t start, end;
	uint32_t stack; /* stack id of the mmap that made it (0: none) */
};

/* Per stack id (as recorded; canonicalize for grouping). */
struct an_map_stack {
	uint32_t stack;
	uint64_t calls;	  /* successful mmap calls */
	uint64_t bytes;	  /* bytes they mapped (page-rounded) */
	uint64_t live;	  /* bytes still mapped now */
	uint64_t at_peak; /* bytes live at the mapped peak (copied from live
			     at each new peak: O(stacks) per new peak) */
};

struct an_maps {
	struct an_map_range *r; /* sorted by start, disjoint */
	size_t n, cap;
	struct an_map_stack *s; /* sorted by stack */
	size_t ns, caps;
	uint64_t ranges_bytes; /* bytes in r */
	uint64_t brk_bytes;    /* the program's net break growth */
	int64_t brk_net;       /* the same, signed (may go below 0) */
	uint64_t mapped;       /* ranges_bytes + brk_bytes */
	uint64_t peak, peak_ts;
	uint64_t maps, unmaps, failed; /* successful mmap, munmap calls; failed calls */
	int nomem;
};

void an_maps_init(struct an_maps *m);
void an_maps_free(struct an_maps *m);
/* One event; anything but the mapping calls is ignored.  0, or
 * ATR_E_NOMEM (m->nomem set; later events are ignored). */
int an_maps_event(struct an_maps *m, const struct atr_event *ev);
/* The stack's entry (NULL if it never mapped). */
const struct an_map_stack *an_maps_stack(const struct an_maps *m, uint32_t stack);

#endif
