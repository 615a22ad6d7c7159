/* stk_leaks: the second program whose live-at-exit total is checked against
 * valgrind memcheck's "in use at exit" (test_stacks.py, case valgrind2).
 * Single-threaded and deterministic: every function of the malloc family,
 * realloc chains that move and shrink, a list freed every third node, and
 * blocks that stay live.  No stdio. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *next;
	char payload[40];
};

static void *keep[64];
static int nkeep;

static void hold(void *p)
{
	if (p && nkeep < 64)
		keep[nkeep++] = p;
}

int main(void)
{
	struct node *head = NULL;
	for (int i = 0; i < 300; i++) {
		struct node *n = malloc(sizeof *n);
		if (!n)
			return 1;
		memset(n->payload, i, sizeof n->payload);
		n->next = head;
		head = n;
	}
	int i = 0;
	for (struct node **pp = &head; *pp; i++) { /* free every third node */
		if (i % 3 == 0) {
			struct node *dead = *pp;
			*pp = dead->next;
			free(dead);
		} else {
			pp = &(*pp)->next;
		}
	}
	hold(head);
	char *s = NULL;
	for (int k = 1; k <= 20; k++) { /* grows, moves */
		char *t = realloc(s, (size_t)k * 100);
		if (!t)
			return 2;
		s = t;
	}
	s = realloc(s, 50); /* shrinks */
	hold(s);
	hold(calloc(7, 13));
	void *pm = NULL;
	if (posix_memalign(&pm, 64, 1000) == 0)
		hold(pm);
	hold(aligned_alloc(256, 512));
	hold(memalign(128, 77));
	free(valloc(4000));
	hold(reallocarray(NULL, 9, 11));
	hold(strdup("known leak"));
	free(malloc(100000)); /* mmapped, freed */
	hold(malloc(200000)); /* mmapped, kept */
	/* keep[] itself is static: every block above stays reachable */
	return nkeep > 0 ? 0 : 3;
}
