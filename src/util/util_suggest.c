/* util_suggest.c - see util_suggest.h. */
#include "util_suggest.h"

#include <ctype.h>
#include <strings.h>
#include <string.h>

#define SUG_MAX_LEN 64 /* longer words are not typos of a command or option */

size_t util_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > SUG_MAX_LEN || lb > SUG_MAX_LEN)
		return (size_t)-1;
	/* three rows of the DP matrix suffice for the transposition rule */
	size_t rows[3][SUG_MAX_LEN + 1];
	size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		int ca = tolower((unsigned char)a[i - 1]);
		for (size_t j = 1; j <= lb; j++) {
			int cb = tolower((unsigned char)b[j - 1]);
			size_t best = prev[j - 1] + (ca != cb);
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			cur[j] = best;
		}
		size_t *t = pp;
		pp = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

const char *util_suggest(const char *word, const char *const *names, size_t n)
{
	size_t lw = strlen(word);
	if (lw == 0)
		return NULL;
	size_t limit = lw <= 4 ? 1 : lw <= 8 ? 2 : 3;
	const char *best = NULL, *prefix = NULL;
	size_t best_d = (size_t)-1, nprefix = 0;
	for (size_t i = 0; i < n; i++) {
		if (!names[i])
			continue;
		size_t d = util_edit_distance(word, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
		if (!strncasecmp(word, names[i], lw)) {
			nprefix++;
			prefix = names[i];
		}
	}
	if (best && best_d <= limit && best_d < lw)
		return best;
	return nprefix == 1 ? prefix : NULL;
}
