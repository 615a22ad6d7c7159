/* out_flamesvg.h - a standalone SVG flame graph from folded stacks.
 *
 * Input: stacks as "outer;...;inner" keys with a value each (the same
 * lines `alloctrace flamegraph` prints).  Output: one SVG file, no script,
 * no external resources: frames are rectangles whose width is their share
 * of the total, children above parents, siblings in name order (like
 * FlameGraph's flamegraph.pl); each frame has a <title> tooltip.
 */
#ifndef OUT_FLAMESVG_H
#define OUT_FLAMESVG_H

#include <stdint.h>
#include <stdio.h>

#include "atr_err.h"

struct out_flame;

struct out_flame *out_flame_new(void);
/* Add value to the path key (';'-separated frames).  0, or ATR_E_NOMEM. */
int out_flame_add(struct out_flame *fl, const char *key, uint64_t value);
/* Write the SVG; title and unit ("bytes", "calls") label it.  0, or
 * ATR_E_WRITE (out's error flag is set). */
int out_flame_svg(const struct out_flame *fl, FILE *out, const char *title, const char *unit);
void out_flame_free(struct out_flame *fl);

#endif
