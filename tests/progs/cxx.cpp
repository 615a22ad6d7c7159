// cxx.cpp - explicit new/delete, new[]/delete[] and aligned new of known
// types and counts.  With libstdc++ each operator new is one malloc, each
// operator delete one free; aligned new (alignment above
// __STDCPP_DEFAULT_NEW_ALIGNMENT__) is one aligned_alloc.  No STL container
// is used: their growth policies are not part of any contract.
//
// libstdc++ makes one malloc of its own before main: the emergency pool for
// exceptions thrown when malloc fails (eh_alloc.cc, a static constructor).
// It is counted as this process's (STARTUP_MALLOCS); the pool is never
// freed.
//
// usage: cxx [ROUNDS]
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unistd.h>

namespace
{

constexpr unsigned long STARTUP_MALLOCS = 1;

unsigned long n_malloc = STARTUP_MALLOCS, n_free, n_aligned;

struct Small {
	int a, b;
	Small() : a(1), b(2)
	{
	}
};

struct Big {
	char data[5000];
	Big()
	{
		data[0] = 1;
		data[4999] = 2;
	}
};

struct alignas(64) Aligned {
	char data[100];
};

struct Node {
	Node *next;
	long v;
};

volatile long sink;

[[noreturn]] void die(const char *what)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "cxx[%d]: FAIL: %s\n", (int)getpid(), what);
	if (write(2, buf, (size_t)n) < 0) {
	}
	_exit(1);
}

void round_trip(unsigned i)
{
	Small *s = new Small;
	n_malloc++;
	sink = s->a + s->b;
	delete s;
	n_free++;

	Big *b = new Big;
	n_malloc++;
	sink = b->data[0];
	delete b;
	n_free++;

	int *arr = new int[100 + i % 50];
	n_malloc++;
	arr[0] = 1;
	sink = arr[0];
	delete[] arr;
	n_free++;

	Small *sa = new Small[10];
	n_malloc++;
	sink = sa[9].b;
	delete[] sa;
	n_free++;

	Aligned *al = new Aligned;
	n_aligned++;
	if ((reinterpret_cast<uintptr_t>(al) & 63) != 0)
		die("aligned new not aligned");
	al->data[0] = 1;
	sink = al->data[0];
	delete al;
	n_free++;

	Aligned *ala = new Aligned[3];
	n_aligned++;
	if ((reinterpret_cast<uintptr_t>(ala) & 63) != 0)
		die("aligned new[] not aligned");
	sink = ala[2].data[0] = 3;
	delete[] ala;
	n_free++;

	// a linked list built and torn down
	Node *head = nullptr;
	for (int k = 0; k < 20; k++) {
		head = new Node{head, k};
		n_malloc++;
	}
	while (head) {
		Node *nx = head->next;
		sink = head->v;
		delete head;
		n_free++;
		head = nx;
	}

	// nothrow new that succeeds
	Small *ns = new (std::nothrow) Small;
	n_malloc++;
	if (!ns)
		die("nothrow new");
	delete ns;
	n_free++;
}

} // namespace

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], nullptr, 10) : 300;
	for (unsigned i = 0; i < rounds; i++)
		round_trip(i);

	char buf[512];
	int n = snprintf(
	    buf, sizeof buf,
	    "{\"prog\":\"cxx\",\"pid\":%d,\"ppid\":%d,\"calls\":{\"malloc\":%lu,\"free\":%lu,"
	    "\"calloc\":0,\"realloc\":0,\"reallocarray\":0,\"memalign\":0,\"posix_memalign\":0,"
	    "\"aligned_alloc\":%lu,\"valloc\":0,\"pvalloc\":0},\"free_null\":0,\"threads\":1}\n",
	    (int)getpid(), (int)getppid(), n_malloc, n_free, n_aligned);
	if (write(1, buf, (size_t)n) != n)
		die("write");
	return 0;
}
