/* pwritecost.c - what a deferred flush (record --encode later) costs in
 * the kernel, which callgrind does not count: per full staging block, the
 * recorder's copy_block() (src/preload/atp_writer.c) opens the trace by
 * path, fstat()s it, pwritev()s the mapped block (256 KiB) to a fresh
 * unit at the end of the file, pwrite()s 4 bytes (the unit's kind) and
 * closes the file.  This does the same, from a MAP_SHARED block of the
 * same file, and prints the CPU time (user+sys of this process,
 * CLOCK_PROCESS_CPUTIME_ID) per block: median and min-max over R rounds
 * of N blocks.  The page cache's writeback runs in kernel threads and is
 * not counted here.  Noisy on a shared machine.
 *
 * usage: pwritecost FILE [ROUNDS [BLOCKS [BLOCK_KB]]]   (FILE is deleted)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pwritecost FILE [ROUNDS [BLOCKS [BLOCK_KB]]]\n");
		return 2;
	}
	const char *path = argv[1];
	int rounds = argc > 2 ? atoi(argv[2]) : 21;
	int blocks = argc > 3 ? atoi(argv[3]) : 64;
	size_t bs = (size_t)(argc > 4 ? atoi(argv[4]) : 256) << 10;
	if (rounds < 1 || blocks < 1 || bs < 4096) {
		fprintf(stderr, "pwritecost: bad arguments\n");
		return 2;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || fallocate(fd, 0, 0, (off_t)(bs + 4096)) != 0) {
		perror(path);
		return 1;
	}
	/* the staging block: page 1 of the file, full of record-like words */
	uint64_t *b = mmap(NULL, bs, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4096);
	if (b == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	uint64_t x = 88172645463325252ULL;
	for (size_t i = 0; i < bs / 8; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = x;
	}
	double *per = malloc(sizeof(double) * (size_t)rounds);
	for (int r = 0; r < rounds; r++) {
		off_t off = (off_t)(bs + 4096);
		double t0 = cpu_now();
		for (int k = 0; k < blocks; k++, off += (off_t)bs) {
			int f = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
			struct stat st;
			uint8_t h[64];
			uint32_t kind = 2;
			struct iovec v[2] = {{h, sizeof h}, {(uint8_t *)b + 64, bs - 64}};
			if (f < 0 || fstat(f, &st) != 0 || pwritev(f, v, 2, off) != (ssize_t)bs ||
			    pwrite(f, &kind, 4, off + 4) != 4) {
				perror("write");
				return 1;
			}
			close(f);
		}
		per[r] = (cpu_now() - t0) / blocks * 1e9;
		/* drop the copies: the next round writes fresh file space again */
		if (ftruncate(fd, (off_t)(bs + 4096)) != 0) {
			perror("ftruncate");
			return 1;
		}
	}
	qsort(per, (size_t)rounds, sizeof *per, cmp_d);
	printf("block %zu KiB, %d rounds of %d blocks: CPU per block median %.0f ns (min %.0f, max "
	       "%.0f)\n",
	       bs >> 10, rounds, blocks, per[rounds / 2], per[0], per[rounds - 1]);
	munmap(b, bs);
	close(fd);
	unlink(path);
	return 0;
}
