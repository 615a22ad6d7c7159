/* liveset.c - one thread keeping LIVE blocks alive, replacing a random one
 * per step (free + malloc of 16-512 bytes): a trace whose live set is
 * LIVE blocks, for convert's throughput on large live sets (issue 12).
 *
 *   gcc -O2 -o liveset bench/replay/liveset.c && liveset LIVE STEPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s LIVE STEPS\n", argv[0]);
		return 2;
	}
	size_t live = strtoull(argv[1], NULL, 10), steps = strtoull(argv[2], NULL, 10);
	void **v = calloc(live, sizeof(*v));
	uint64_t s = 88172645463325252ull;
	for (size_t i = 0; i < live; i++)
		v[i] = malloc(16 + i % 497);
	for (size_t i = 0; i < steps; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t k = (size_t)(s % live);
		free(v[k]);
		v[k] = malloc(16 + (size_t)(s >> 40) % 497);
	}
	for (size_t i = 0; i < live; i++)
		free(v[i]);
	free(v);
	return 0;
}
