/* util_suggest.h - "did you mean": the closest of a set of names to a typo. */
#ifndef UTIL_SUGGEST_H
#define UTIL_SUGGEST_H

#include <stddef.h>

/* Optimal-string-alignment distance (insert, delete, substitute, swap two
 * neighbours: "recrod" is 1 from "record"); a..b compared case-insensitively. */
size_t util_edit_distance(const char *a, const char *b);

/* The closest of names[0..n) to word, or NULL if none is close enough to be
 * a plausible typo: distance at most 1 for words up to 4 characters, 2 up to
 * 8, 3 beyond; or word is a prefix of exactly one name.  Ties go to the
 * earlier name. */
const char *util_suggest(const char *word, const char *const *names, size_t n);

#endif
