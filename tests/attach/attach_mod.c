/* attach_mod.c - a module attach_dl dlopens while `record -p` is attached:
 * its GOT entries must get redirected too (test_attach.py, case dlopen). */
#include <stdlib.h>

void *attach_mod_alloc(void);
void attach_mod_free(void *p);

void *attach_mod_alloc(void)
{
	return malloc(777);
}

void attach_mod_free(void *p)
{
	free(p);
}
