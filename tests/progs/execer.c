/* execer.c - one pid, three program images: the first makes some calls and
 * execv()s itself, the second makes other calls and execs again, the third
 * makes yet others and exits.  The trace files are DIR/<pid>.atr,
 * DIR/<pid>.1.atr and DIR/<pid>.2.atr; each line printed carries "image".
 *
 * usage: execer [IMAGE]   (IMAGE is internal: 1, 2)
 */
#include "progs.h"

static void work(unsigned n, unsigned image)
{
	void *keep = NULL;
	for (unsigned i = 0; i < n; i++) {
		void *p = t_malloc(8 + (i * 13 + image) % 3000);
		CHECK(p);
		if (image == 1 && i % 3 == 0) {
			void *c = t_calloc(2, 64);
			CHECK(c);
			t_free(c);
		}
		if (image == 2 && i % 4 == 0) {
			void *a = t_memalign(32, 64);
			CHECK(a);
			t_free(a);
		}
		t_free(p);
	}
	/* left allocated across the exec: no free ever comes for it */
	keep = t_malloc(4096);
	CHECK(keep);
}

int main(int argc, char **argv)
{
	prog_name = "execer";
	unsigned image = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
	static const unsigned counts[] = {700, 1100, 1300};
	if (image > 2)
		die("bad image %u", image);
	work(counts[image], image);

	char extra[96];
	/* images that exec never run the library's destructor */
	snprintf(extra, sizeof extra, "\"threads\":1,\"image\":%u,\"clean_exit\":%s", image,
		 image == 2 ? "true" : "false");
	expect_print(extra);
	if (image == 2)
		return 0;

	char next[16];
	snprintf(next, sizeof next, "%u", image + 1);
	char *nargv[] = {argv[0], next, NULL};
	execv("/proc/self/exe", nargv);
	die("execv: %s", strerror(errno));
}
