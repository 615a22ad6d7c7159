/* rp_alloc.c - see rp_alloc.h. */
#define _GNU_SOURCE
#include "replay/rp_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* `ldconfig -p` lines: "\tlibjemalloc.so.2 (libc6,x86-64) => /lib/...". */
static int from_ldconfig(const char *soname, char *out, size_t len)
{
	static const char *const cmds[] = {"/sbin/ldconfig -p 2>/dev/null",
					   "/usr/sbin/ldconfig -p 2>/dev/null",
					   "ldconfig -p 2>/dev/null"};
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		FILE *f = popen(cmds[c], "r");
		if (!f)
			continue;
		char line[1024];
		int found = 0;
		while (!found && fgets(line, sizeof(line), f)) {
			char *s = line;
			while (*s == ' ' || *s == '\t')
				s++;
			size_t n = strlen(soname);
			if (strncmp(s, soname, n) || (s[n] != ' ' && s[n] != '\t'))
				continue;
			char *arrow = strstr(s, "=> ");
			if (!arrow)
				continue;
			char *p = arrow + 3;
			p[strcspn(p, "\n")] = 0;
			if (exists(p)) {
				snprintf(out, len, "%s", p);
				found = 1;
			}
		}
		pclose(f);
		if (found)
			return 0;
	}
	return -1;
}

const char *const rp_allocator_names[] = {"glibc",    "jemalloc", "tcmalloc",
					  "mimalloc", "none",	  NULL};

int rp_find_allocator(const char *name, char *lib, size_t liblen, char *eb, size_t el)
{
	static const struct {
		const char *name;
		const char *sonames[3];
		const char *pkg;
	} known[] = {
	    {"jemalloc", {"libjemalloc.so.2", "libjemalloc.so", NULL}, "libjemalloc2"},
	    {"tcmalloc",
	     {"libtcmalloc_minimal.so.4", "libtcmalloc.so.4", NULL},
	     "libtcmalloc-minimal4"},
	    {"mimalloc", {"libmimalloc.so.2", "libmimalloc.so", NULL}, "libmimalloc2.0"},
	};
	static const char *const dirs[] = {
	    "/usr/lib/x86_64-linux-gnu",
	    "/lib/x86_64-linux-gnu",
	    "/usr/lib/aarch64-linux-gnu",
	    "/lib/aarch64-linux-gnu",
	    "/usr/lib64",
	    "/usr/local/lib",
	    "/usr/lib",
	    "/lib64",
	};
	lib[0] = 0;
	if (!strcmp(name, "glibc") || !strcmp(name, "none") || !strcmp(name, "system"))
		return 0;
	if (strchr(name, '/') || strstr(name, ".so")) {
		if (!exists(name)) {
			snprintf(eb, el, "allocator library %s: %s", name, strerror(errno));
			return ATR_E_IO;
		}
		if (name[0] != '/') {
			char *rp = realpath(name, NULL);
			snprintf(lib, liblen, "%s", rp ? rp : name);
			free(rp);
		} else {
			snprintf(lib, liblen, "%s", name);
		}
		return 0;
	}
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
		if (strcmp(name, known[k].name))
			continue;
		for (int s = 0; known[k].sonames[s]; s++) {
			if (from_ldconfig(known[k].sonames[s], lib, liblen) == 0)
				return 0;
			for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
				char p[512];
				snprintf(p, sizeof(p), "%s/%s", dirs[d], known[k].sonames[s]);
				if (exists(p)) {
					snprintf(lib, liblen, "%s", p);
					return 0;
				}
			}
		}
		snprintf(eb, el,
			 "allocator %s: %s not found (ldconfig -p, multiarch dirs); install %s",
			 name, known[k].sonames[0], known[k].pkg);
		return ATR_E_NOTFOUND;
	}
	snprintf(eb, el,
		 "unknown allocator '%s' (glibc, jemalloc, tcmalloc, mimalloc, none, or a path to "
		 "a .so)",
		 name);
	return ATR_E_USAGE;
}

int rp_exec_runner(const char *exe, char **argv, const char *lib, const char *tunables, char *eb,
		   size_t el)
{
#if defined(__SANITIZE_ADDRESS__)
	if (lib[0]) {
		snprintf(eb, el,
			 "this alloctrace is built with AddressSanitizer, which cannot run under "
			 "another "
			 "allocator (%s); use a build without -DALLOCTRACE_SANITIZE=ON",
			 lib);
		return ATR_E_UNSUPPORTED;
	}
#endif
	/* Keep liballoctrace.so if it is preloaded (`alloctrace record --
	   alloctrace replay ...`: a user checking the replay's calls), in
	   front of the allocator so that it sees every call; drop the rest.
	   Plain glibc leaves LD_PRELOAD alone (as before the runner, when
	   such a replay ran in the process that parsed its options). */
	int filter = lib[0] || (tunables && tunables[0]);
	char pre[4096] = "";
	const char *old = getenv("LD_PRELOAD");
	if (old && filter) {
		char *dup = strdup(old), *sv = NULL;
		for (char *t = dup ? strtok_r(dup, ": ", &sv) : NULL; t;
		     t = strtok_r(NULL, ": ", &sv))
			if (strstr(t, "liballoctrace") &&
			    strlen(pre) + strlen(t) + 2 < sizeof(pre)) {
				strcat(pre, pre[0] ? ":" : "");
				strcat(pre, t);
			}
		free(dup);
	}
	if (lib[0] && strlen(pre) + strlen(lib) + 2 < sizeof(pre)) {
		strcat(pre, pre[0] ? ":" : "");
		strcat(pre, lib);
	}
	if (filter && pre[0] && setenv("LD_PRELOAD", pre, 1) < 0)
		goto fail;
	if (filter && !pre[0])
		unsetenv("LD_PRELOAD");
	if (tunables && tunables[0] && setenv("GLIBC_TUNABLES", tunables, 1) < 0)
		goto fail;
	if (setenv(RP_CHILD_ENV, "1", 1) < 0)
		goto fail;
	execve(exe, argv, environ);
fail:
	snprintf(eb, el, "cannot execute %s: %s", exe, strerror(errno));
	return ATR_E_IO;
}
