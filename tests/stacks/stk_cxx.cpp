// stk_cxx.cpp - C++ built -O2 -g for the symbolization test (test_stacks.py
// "cxx"): templates, lambdas, std containers and a three-level inline chain
// (outer -> middle -> inner -> std::vector::push_back), so that every frame
// of every recorded stack can be compared with `addr2line -C -f -i`.
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace app
{

template <typename T> struct Pool {
	std::vector<T> items;
	__attribute__((always_inline)) inline void inner(T v)
	{
		items.push_back(v);
	}
	__attribute__((always_inline)) inline void middle(T v)
	{
		inner(v);
		inner(v + 1);
	}
	__attribute__((always_inline)) inline void outer(T v)
	{
		middle(v * 2);
	}
};

template <typename K> __attribute__((noinline)) std::map<K, std::string> *index_of(int n)
{
	auto *m = new std::map<K, std::string>;
	for (int i = 0; i < n; i++)
		(*m)[static_cast<K>(i)] = std::string(40 + i % 7, 'x');
	return m;
}

__attribute__((noinline)) long build(int n)
{
	Pool<long> p;
	for (int i = 0; i < n; i++)
		p.outer(i);
	long s = 0;
	for (long v : p.items)
		s += v;
	return s;
}

__attribute__((noinline)) size_t with_lambda(int n)
{
	std::vector<std::unique_ptr<std::string>> keep;
	auto make = [&keep](int k) { keep.push_back(std::make_unique<std::string>(64 + k, 'y')); };
	for (int i = 0; i < n; i++)
		make(i);
	std::function<size_t()> total = [&keep]() {
		size_t t = 0;
		for (auto &s : keep)
			t += s->size();
		return t;
	};
	return total();
}

} // namespace app

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 200;
	long s = app::build(n);
	auto *m = app::index_of<int>(n);
	auto *l = app::index_of<long>(n / 2);
	size_t t = app::with_lambda(n);
	std::printf("%ld %zu %zu %zu\n", s, m->size(), l->size(), t);
	delete l; // m leaks on purpose
	return 0;
}
