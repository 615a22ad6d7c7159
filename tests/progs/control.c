/* control.c - the control API (include/alloctrace.h).
 *
 *   [nostart: calls while recording is off (ALLOCTRACE_START=0), start()]
 *   phase 1: recorded calls
 *   pause(); calls (not recorded); resume()
 *   phase 2: recorded calls, marker("phase-2"); sync() grew by the calls
 *   stop(); calls (not recorded); start(); a few recorded calls; stop();
 *   calls after the final stop (not recorded)
 *
 * The expected counts hold only the recorded calls.  Without the tracer
 * every function returns 0 and the program checks that too.  It prints
 * "present": whether the tracer was loaded.
 *
 * usage: control [nostart]
 */
#include "progs.h"

#include "alloctrace.h"

static void recorded(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = t_malloc(32 + i % 300);
		CHECK(p);
		if (i % 4 == 0) {
			void *c = t_calloc(2, 16);
			CHECK(c);
			t_free(c);
		}
		t_free(p);
	}
}

/* Calls the tracer must not see; not in the tally. */
static void unrecorded(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(48 + i % 200);
		CHECK(p);
		touch(p, 48);
		p = realloc(p, 1000);
		CHECK(p);
		touch(p, 1000);
		free(p);
	}
}

static unsigned long calls_so_far(void)
{
	unsigned long s = 0;
	for (int i = 0; i < F_COUNT; i++)
		s += T.c[i];
	return s;
}

/* sync() grew by at least the calls made, and by at most `meta` more
 * (control records, markers, thread start). */
static void check_growth(const char *what, uint64_t before, uint64_t after, unsigned long calls,
			 unsigned meta)
{
	if (after < before + calls || after > before + calls + meta)
		die("%s: sync() went from %llu to %llu; expected growth %lu..%lu", what,
		    (unsigned long long)before, (unsigned long long)after, calls, calls + meta);
}

int main(int argc, char **argv)
{
	prog_name = "control";
	int nostart = argc > 1 && strcmp(argv[1], "nostart") == 0;
	int present = alloctrace_present();

	if (!present) {
		/* no tracer: everything is a no-op that returns 0 */
		CHECK(alloctrace_start() == 0);
		CHECK(alloctrace_pause() == 0);
		CHECK(alloctrace_resume() == 0);
		CHECK(alloctrace_marker("x") == 0);
		CHECK(alloctrace_sync() == 0);
		CHECK(alloctrace_stop() == 0);
		CHECK(mtrace_sync() == 0);
	}

	if (nostart) {
		/* recording is off until start() */
		uint64_t s0 = alloctrace_sync();
		unrecorded(200);
		uint64_t s1 = alloctrace_sync();
		if (present && s1 != s0)
			die("records written before start(): sync %llu -> %llu",
			    (unsigned long long)s0, (unsigned long long)s1);
		CHECK(alloctrace_start() == 0);
	}

	recorded(100);
	uint64_t s0 = alloctrace_sync();
	if (present && s0 < calls_so_far())
		die("sync() = %llu after %lu calls", (unsigned long long)s0, calls_so_far());

	/* pause: nothing recorded */
	CHECK(alloctrace_pause() == 0);
	unrecorded(300);
	uint64_t sp = alloctrace_sync();
	CHECK(alloctrace_resume() == 0);
	uint64_t s1 = alloctrace_sync();
	if (present) {
		check_growth("pause", s0, sp, 0, 1);
		check_growth("pause+resume", s0, s1, 0, 2);
	}

	/* phase 2 */
	unsigned long c0 = calls_so_far();
	recorded(250);
	CHECK(alloctrace_marker("phase-2") == 0);
	uint64_t s2 = alloctrace_sync();
	if (present)
		check_growth("phase 2", s1, s2, calls_so_far() - c0, 2);

	/* stop, start again, stop */
	CHECK(alloctrace_stop() == 0);
	unrecorded(150);
	uint64_t s3 = alloctrace_sync();
	if (present)
		check_growth("stop", s2, s3, 0, 1);
	CHECK(alloctrace_start() == 0);
	c0 = calls_so_far();
	recorded(40);
	uint64_t s4 = alloctrace_sync();
	if (present)
		check_growth("restart", s3, s4, calls_so_far() - c0, 2);
	CHECK(alloctrace_stop() == 0);
	unrecorded(120);
	/* a marker while stopped is refused (or at least not written) */
	(void)alloctrace_marker("after-stop");
	uint64_t s5 = alloctrace_sync();
	if (present)
		check_growth("after final stop", s4, s5, 0, 1);

	char extra[160];
	snprintf(extra, sizeof extra, "\"threads\":1,\"present\":%s,\"markers\":[\"phase-2\"]",
		 present ? "true" : "false");
	expect_print(extra);
	return 0;
}
