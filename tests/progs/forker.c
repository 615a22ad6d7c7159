/* forker.c - processes: fork, vfork+exec, posix_spawn.
 *
 *   parent: N1 calls, fork()
 *     fork child: N2 calls, frees one block inherited from the parent,
 *                 prints its line, exit(0)
 *   parent: waitpid, N3 calls
 *   parent: vfork() + execv(self, "exec-child")
 *     exec child: N4 calls, prints its line
 *   parent: posix_spawn(self, "spawn-child")
 *     spawn child: N5 calls, prints its line
 *   parent: N6 calls, prints its line (the last one)
 *
 * Every process prints {"pid":..., "calls":{...}, "root":true|false}; a fork
 * child's counts hold only what it did after fork().
 *
 * usage: forker            the whole tree
 *        forker exec-child | spawn-child   (internal)
 */
#include "progs.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static void mix(unsigned n, unsigned salt)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = t_malloc(24 + (i + salt) % 700);
		CHECK(p);
		if (i % 5 == 0) {
			p = t_realloc(p, 2000 + i);
			CHECK(p);
		}
		if (i % 7 == 0) {
			void *c = t_calloc(3, 40);
			CHECK(c);
			t_free(c);
		}
		t_free(p);
	}
}

static void wait_ok(pid_t pid, const char *what)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid(%s): %s", what, strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s exited with status 0x%x", what, st);
}

int main(int argc, char **argv)
{
	prog_name = "forker";
	if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
		mix(400, 4);
		expect_print("\"threads\":1,\"root\":false,\"role\":\"exec-child\"");
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "spawn-child") == 0) {
		mix(500, 5);
		expect_print("\"threads\":1,\"root\":false,\"role\":\"spawn-child\"");
		return 0;
	}

	/* a block that lives across fork: both processes free it */
	void *kept = t_malloc(1000);
	CHECK(kept);
	mix(1000, 1);

	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		tally_reset();
		mix(2000, 2);
		/* a block of the parent's heap: the trace shows it as an
		 * inherited free, not an unknown one */
		t_free(kept);
		expect_print("\"threads\":1,\"root\":false,\"role\":\"fork-child\","
			     "\"inherited_frees\":1");
		exit(0);
	}
	wait_ok(pid, "fork child");
	mix(300, 3);

	/* vfork + exec: nothing but execv/_exit in the child */
	char self[4096];
	ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
	if (l <= 0)
		die("readlink /proc/self/exe");
	self[l] = 0;
	char *exec_argv[] = {argv[0], (char *)"exec-child", NULL};
	pid = vfork();
	if (pid < 0)
		die("vfork: %s", strerror(errno));
	if (pid == 0) {
		execv(self, exec_argv);
		_exit(127);
	}
	wait_ok(pid, "vfork+exec child");

	char *spawn_argv[] = {argv[0], (char *)"spawn-child", NULL};
	int rc = posix_spawn(&pid, self, NULL, NULL, spawn_argv, environ);
	if (rc != 0)
		die("posix_spawn: %s", strerror(rc));
	wait_ok(pid, "posix_spawn child");

	mix(600, 6);
	t_free(kept);
	expect_print("\"threads\":1,\"root\":true,\"role\":\"parent\"");
	return 0;
}
