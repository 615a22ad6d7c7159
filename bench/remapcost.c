/* remapcost.c - two ways to get a full staging block's bytes into the
 * trace file, per 256 KiB block, CPU of this process (user+sys):
 *   copy:     one MAP_SHARED block reused; each time it is full it is
 *             pwrite()n to a fresh unit at the end (what the recorder does
 *             with ALLOCTRACE_ENCODE=later: atp_writer.c's copy_block);
 *   populate: the mapping moved to a fresh unit (mmap MAP_FIXED) and
 *             filled in with one madvise(MADV_POPULATE_WRITE), no copy;
 *   fault:    the same without the madvise: a page fault per page.
 * Each variant writes the block's 256 KiB itself, as the program would.
 * The file is deleted.  usage: remapcost copy|populate|fault FILE BLOCKS
 * (bench/RESULTS.md, "The v2 recorder against the v1 one").
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void fill(uint64_t *p, size_t words, uint64_t seed)
{
	for (size_t i = 0; i < words; i++) {
		seed = seed * 6364136223846793005ull + 1;
		p[i] = seed;
	}
}
int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s copy|populate|fault FILE BLOCKS\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	const char *path = argv[2];
	long n = atol(argv[3]);
	size_t B = 256 << 10;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	double t0 = cpu_now();
	uint8_t *m = NULL;
	if (!strcmp(mode, "copy")) {
		fallocate(fd, 0, 0, B);
		m = mmap(NULL, B, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		for (long i = 0; i < n; i++) {
			fill((uint64_t *)m, B / 8, i);
			fallocate(fd, 0, (i + 1) * B, B);
			if (pwrite(fd, m, B, (off_t)(i + 1) * B) != (ssize_t)B) {
				perror("pwrite");
				return 1;
			}
		}
	} else {
		int pop = !strcmp(mode, "populate");
		for (long i = 0; i < n; i++) {
			fallocate(fd, 0, (off_t)i * B, B);
			m = mmap(m, B, PROT_READ | PROT_WRITE, MAP_SHARED | (m ? MAP_FIXED : 0), fd,
				 (off_t)i * B);
			if (m == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			if (pop && madvise(m, B, MADV_POPULATE_WRITE)) {
				perror("madvise");
				return 1;
			}
			fill((uint64_t *)m, B / 8, i);
		}
	}
	double t1 = cpu_now();
	printf("%s: %.1f us CPU per 256 KiB block (%ld blocks, %.0f MB)\n", mode,
	       (t1 - t0) * 1e6 / n, n, n * B / 1e6);
	close(fd);
	unlink(path);
	return 0;
}
