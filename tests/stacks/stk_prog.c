/* stk_prog: a known call tree for the stack tests (tests/stacks/test_stacks.py).
 *
 *   main -> a -> b -> malloc(100)     5 times, each freed at once
 *   main -> c -> malloc(64)           STK_C_CALLS times, each freed at once
 *   main -> leaky -> malloc(1234)     leaked
 *   main -> shlib_alloc -> malloc(3000)  (libstkshared.so) leaked
 *   main -> mod_alloc -> malloc(4000)    (stk_module.so, dlopen'ed) leaked
 *
 * usage: stk_prog MODULE_PATH [C_CALLS]  (C_CALLS defaults to STK_C_CALLS;
 * the diff test varies it).  No stdio: nothing but the calls above and
 * what dlopen itself allocates.  Built -O0 -fno-inline -fno-omit-frame-pointer -g.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define STK_C_CALLS 1000

void *shlib_alloc(size_t n);
void *b(size_t n);
void *a(size_t n);
void c(int n);
void leaky(void);

static void *leaked;

void *b(size_t n)
{
	return malloc(n);
}

void *a(size_t n)
{
	return b(n);
}

void c(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(64);
		free(p);
	}
}

void leaky(void)
{
	leaked = malloc(1234);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		static const char msg[] = "usage: stk_prog MODULE_PATH\n";
		if (write(2, msg, sizeof msg - 1) < 0)
			return 2;
		return 2;
	}
	for (int i = 0; i < 5; i++)
		free(a(100));
	c(argc > 2 ? atoi(argv[2]) : STK_C_CALLS);
	leaky();
	void *s = shlib_alloc(3000);
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 3;
	void *(*mod)(size_t) = (void *(*)(size_t))dlsym(h, "mod_alloc");
	if (!mod)
		return 4;
	void *m = mod(4000);
	(void)s;
	(void)m;
	return 0;
}
