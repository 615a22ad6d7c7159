/* readbench.c - the trace reader alone: walk every record of trace files
 * the way `info` and convert do (atr_iter_next_calls, batches of compact
 * records and the full events between them) or one event at a time
 * (atr_iter_next_ref), and print the records, a checksum of their fields
 * (so that two builds can be compared) and this process's CPU time
 * (user+sys).  No live set: what is left is the reader's own cost.  Built
 * and run by bench/read_speed.sh.
 *
 * usage: readbench calls|events [--prefetch] [--hash] FILE...
 *   --prefetch: an empty prefetch hook (the reader's side of it only)
 *   --hash: a checksum of every field (to compare builds; it costs as
 *           much as a third of the reader), else of a few
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "atr_reader.h"

static uint64_t pf_count;

static void pf_hook(void *ctx, uint64_t addr)
{
	(void)ctx;
	pf_count += addr != 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

static uint64_t mix_call(uint64_t h, const struct atr_call *c)
{
	h = mix(h, c->ts);
	h = mix(h, c->ptr);
	h = mix(h, c->ret);
	h = mix(h, c->size);
	h = mix(h, c->nmemb ^ c->align << 1);
	h = mix(h, c->usable ^ c->duration << 1);
	h = mix(h, (uint64_t)c->thread << 32 ^ c->tid);
	h = mix(h, (uint64_t)c->stack_id << 32 ^ (uint32_t)c->err);
	return mix(h, (uint64_t)c->type << 16 ^ (uint64_t)c->flags << 8 ^ c->chunk_flags);
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "calls") && strcmp(argv[1], "events"))) {
		fprintf(stderr, "usage: readbench calls|events [--prefetch] [--hash] FILE...\n");
		return 2;
	}
	int calls = !strcmp(argv[1], "calls"), i = 2, pf = 0, hash = 0, bad = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--prefetch"))
			pf = 1;
		else if (!strcmp(argv[i], "--hash"))
			hash = 1;
		else {
			fprintf(stderr, "readbench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	uint64_t records = 0, events = 0, h = 0xcbf29ce484222325ULL;
	for (; i < argc; i++) {
		char err[512];
		atr_file *f;
		atr_iter *it;
		if (atr_open(argv[i], &f, err, sizeof err) < 0) {
			fprintf(stderr, "readbench: %s\n", err);
			return 1;
		}
		int r = atr_iter_new(f, &it);
		if (r < 0) {
			fprintf(stderr, "readbench: %s\n", atr_last_error(f));
			return 1;
		}
		if (pf)
			atr_iter_set_prefetch(it, pf_hook, NULL);
		const struct atr_event *ev;
		if (calls) {
			struct atr_call c[64];
			size_t n;
			while ((r = atr_iter_next_calls(it, c, 64, &n, &ev)) > 0) {
				if (hash)
					for (size_t k = 0; k < n; k++)
						h = mix_call(h, &c[k]);
				else
					for (size_t k = 0; k < n; k++)
						h += c[k].ts ^ c[k].ptr ^ c[k].ret ^ c[k].size;
				records += n;
				if (ev) {
					events++;
					h = mix(h, ev->ts ^ (uint64_t)ev->type << 56);
				}
			}
		} else {
			while ((r = atr_iter_next_ref(it, &ev)) > 0) {
				struct atr_call c;
				atr_event_call(ev, &c);
				if (hash)
					h = mix_call(h, &c);
				else
					h += c.ts ^ c.ptr ^ c.ret ^ c.size;
				events++;
			}
		}
		if (r < 0) {
			fprintf(stderr, "readbench: %s\n", atr_last_error(f));
			bad = 1;
		}
		atr_iter_free(it);
		atr_close(f);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("records %" PRIu64 " events %" PRIu64 " prefetched %" PRIu64 " hash %016" PRIx64
	       " cpu %.3f\n",
	       records + events, events, pf_count, h, cpu);
	return bad;
}
