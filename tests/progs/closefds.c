/* closefds.c - a program that closes every file descriptor, its standard
 * ones included, and then allocates enough to need many new blocks (run it
 * with ALLOCTRACE_BUFFER_KB=4).  The tracer must neither lose records nor
 * write into descriptors the program owns now: the program opens its output
 * file after the close (it gets fd 0), writes DATA lines to it between
 * bursts of calls, and the driver checks the file holds exactly those lines
 * and then the expectation line, and that nothing arrived on a pipe that
 * took descriptors 1 and 2.
 *
 * usage: closefds OUTFILE
 */
#include "progs.h"

#include <fcntl.h>
#include <sys/syscall.h>

#define BURSTS	  50
#define PER_BURST 400

static void burst(unsigned b)
{
	for (unsigned i = 0; i < PER_BURST; i++) {
		void *p = t_malloc(16 + (i + b) % 900);
		CHECK(p);
		if (i % 8 == 0) {
			p = t_realloc(p, 1200);
			CHECK(p);
		}
		t_free(p);
	}
}

int main(int argc, char **argv)
{
	prog_name = "closefds";
	if (argc != 2)
		die("usage: closefds OUTFILE");
	const char *out = argv[1];

	burst(0); /* some records before the close */

	/* everything above the standard descriptors, then those */
	if (syscall(SYS_close_range, 3U, ~0U, 0) != 0) {
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	}
	close(0);
	close(1);
	close(2);

	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != 0)
		_exit(3); /* nowhere to report: the driver sees status 3 */
	/* a pipe takes 1 and 2: whatever is written there, the tracer must
	 * not write it */
	int pfd[2];
	if (pipe2(pfd, O_NONBLOCK) != 0 || pfd[0] != 1 || pfd[1] != 2)
		_exit(4);
	for (unsigned b = 1; b <= BURSTS; b++) {
		burst(b);
		char line[32];
		int n = snprintf(line, sizeof line, "DATA %u\n", b);
		if (write(fd, line, (size_t)n) != n)
			_exit(5);
	}
	char junk[256];
	ssize_t got = read(pfd[0], junk, sizeof junk);
	if (got >= 0 || errno != EAGAIN) {
		char line[64];
		int n = snprintf(line, sizeof line, "PIPE GOT %zd BYTES\n", got);
		if (write(fd, line, (size_t)n) != n)
			_exit(6);
	}
	close(pfd[0]);
	close(pfd[1]);
	expect_print_fd(fd, "\"threads\":1");
	close(fd);
	return 0;
}
