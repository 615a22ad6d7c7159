/* chdirer.c - changes its working directory, then allocates enough to need
 * many new blocks (run with a 4 KiB buffer).  A trace named by a relative
 * path (ALLOCTRACE_DIR=trace, ALLOCTRACE_FILE=x.atr) must still receive
 * every record: the tracer may not re-resolve the name against the new
 * working directory.
 *
 * usage: chdirer [DIR]   (default /)
 */
#include "progs.h"

int main(int argc, char **argv)
{
	prog_name = "chdirer";
	const char *dir = argc > 1 ? argv[1] : "/";
	for (unsigned i = 0; i < 500; i++) {
		void *p = t_malloc(16 + i % 100);
		CHECK(p);
		t_free(p);
	}
	if (chdir(dir) != 0)
		die("chdir %s: %s", dir, strerror(errno));
	for (unsigned i = 0; i < 20000; i++) {
		void *p = t_malloc(16 + i % 1000);
		CHECK(p);
		if (i % 10 == 0) {
			p = t_realloc(p, 2000);
			CHECK(p);
		}
		t_free(p);
	}
	expect_print("\"threads\":1");
	return 0;
}
