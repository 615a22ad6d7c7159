/* an_flamesvg.h - a standalone SVG flame graph from folded stacks.
 *
 * Input: stacks as "outer;...;inner" keys with a value each (the same
 * lines `alloctrace flamegraph` prints).  Output: one SVG file, no script,
 * no external resources: frames are rectangles whose width is their share
 * of the total, children above parents, siblings in name order (like
 * FlameGraph's flamegraph.pl); each frame has a <title> tooltip.
 */
#ifndef AN_FLAMESVG_H
#define AN_FLAMESVG_H

#include <stdint.h>
#include <stdio.h>

struct an_flame;

struct an_flame *an_flame_new(void);
/* Add value to the path key (';'-separated frames).  0, or -1 (no memory). */
int an_flame_add(struct an_flame *fl, const char *key, uint64_t value);
/* Write the SVG; title and unit ("bytes", "calls") label it.  0 or -1. */
int an_flame_svg(const struct an_flame *fl, FILE *out, const char *title, const char *unit);
void an_flame_free(struct an_flame *fl);

#endif
