/* A module the test program dlopen()s; mod_alloc leaks what it allocates. */
#include <stdlib.h>

void *mod_alloc(size_t n);
static void *kept;

void *mod_alloc(size_t n)
{
	kept = malloc(n);
	return kept;
}
