/* A shared library function that allocates (linked, not dlopen'ed). */
#include <stdlib.h>

void *shlib_alloc(size_t n);

void *shlib_alloc(size_t n)
{
	return malloc(n);
}
