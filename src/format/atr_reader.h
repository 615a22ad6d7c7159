/* atr_reader.h - the one reader of alloctrace trace files.
 *
 * Every tool reads traces through this API; nothing else parses trace bytes.
 * A trace file holds one process image.  Records are returned in global time
 * order (per-thread streams merged by timestamp; ties broken by thread
 * serial, so the order is deterministic).  Memory use is bounded by the
 * number of threads, not the trace length: the file is mapped read-only and
 * walked block by block.
 *
 * Errors follow the zstd convention: functions return an int, negative on
 * error; atr_isError() tests it and atr_errstr() names it.  A more precise
 * message (file, offset, what was wrong) is available from atr_last_error().
 */
#ifndef ATR_READER_H
#define ATR_READER_H

#include <stddef.h>
#include <stdint.h>

#include "atr_err.h"
#include "atr_format.h"

typedef struct atr_file atr_file;

struct atr_info {
	uint32_t version;
	uint64_t features;
	uint32_t status; /* ATR_STATUS_* */
	uint32_t block_size;
	uint32_t pid, ppid, exec_seq;
	uint64_t start_realtime_ns, start_mono_ns;
	uint64_t end_mono_ns;	 /* 0 when the destructor never ran */
	double ticks_per_sec;	 /* calibration used for *_ns conversions */
	uint64_t lost_records;	 /* header counter + LOST records */
	uint64_t untraced_calls; /* passed through by the re-entrancy guard */
	uint64_t blocks;	 /* non-empty blocks */
	uint32_t threads;	 /* distinct thread serials */
	uint64_t records_hint;	 /* sum of block record counts, exact once
				    atr_count_records() was called */
	uint64_t last_ts;	 /* largest record timestamp (ticks) */
	const char *exe;	 /* "" if unknown */
	const char *cmdline;	 /* arguments joined by spaces */
	const char *path;	 /* file this came from */
	/* Added fields.  The ones marked (walk) are exact only after a full
	 * walk: atr_count_records()/atr_count_calls() or an iteration that
	 * reached the end (info.walked is then 1). */
	uint64_t file_size;
	uint64_t header_lost;	    /* the header's ATR_H_LOST counter alone */
	uint32_t header_errno;	    /* ATR_H_ERRNO */
	uint64_t end_ticks;	    /* ATR_H_END_TICKS, 0 if unknown */
	int ticks_guessed;	    /* 1: no calibration known, 1e9 assumed */
	uint64_t lost_blocks;	    /* sequence gaps in threads' block chains
				       (blocks never written; their records
				       are not known individually) */
	uint64_t ignored_staging;   /* staging blocks superseded by data blocks
				       (crash between flush and reset) */
	uint64_t truncated_blocks;  /* blocks cut short by the end of file */
	uint64_t truncated_records; /* data records lost to that (walk; known
				       from block record counts) */
	uint64_t clock_inversions;  /* per-thread timestamps that went
				       backwards and were clamped (walk) */
	uint64_t calls;		    /* call records (walk) */
	int walked;
	uint64_t sample_rate;  /* ATR_FEAT_SAMPLED: mean bytes between
				  samples; 0 = a full trace */
	uint64_t resident_min; /* releases of blocks of at least this many
				  usable bytes carry resident counts
				  (atr_event.span_pages); 0: none */
	uint32_t page_size;    /* the recorder's page size, 0 unknown */
	/* 1..9999: RESIDENT counting took at most this many basis points of
	 * a thread's time, some large releases have no count; 0: all have
	 * one */
	uint32_t res_budget;
	uint32_t ncpu;		/* CPUs the process could run on at start; 0 unknown */
	uint32_t timing_sample; /* without TIMING: every n-th call of a
				   thread carries a duration; 0 none */
	uint32_t cpu_gap_ns;	/* a CPU record precedes a record this long
				   after the thread's previous one; 0 none */
};

/* Synthetic event of the iterator (not a record, not a call): the old
 * block of a realloc/reallocarray is released at the call's start stamp
 * (ts, ptr = old block).  Emitted when the old block dies: the result
 * moved, or realloc(p, 0) freed it.  The realloc event itself follows at its
 * end stamp.  See docs/TRACE_FORMAT.md, "Order". */
#define ATR_EV_REALLOC_RELEASE 32u

/* A decoded record. Fields that do not apply to the type are 0.
 * realloc/reallocarray: ts is the end stamp (the new block exists); the
 * call started at ts - duration. */
struct atr_event {
	uint8_t type;	   /* enum atr_type */
	uint8_t flags;	   /* ATR_FLAG_* */
	uint32_t thread;   /* thread serial, 1-based, unique in the process */
	uint32_t tid;	   /* kernel tid of that thread */
	uint64_t ts;	   /* ticks since start (merge-corrected, monotonic
			      per thread) */
	uint64_t seq;	   /* 0-based index in global order */
	uint64_t ptr;	   /* free: block freed; realloc*: old block */
	uint64_t ret;	   /* allocations: returned block (0 = failure) */
	uint64_t size;	   /* bytes requested (calloc/reallocarray: total) */
	uint64_t nmemb;	   /* calloc/reallocarray element count */
	uint64_t align;	   /* memalign/posix_memalign/aligned_alloc */
	uint64_t usable;   /* usable size of ret, UINT64_MAX unknown */
	uint32_t stack_id; /* 0 = none */
	int32_t err;	   /* posix_memalign result (0 or errno value) */
	uint64_t duration; /* ticks spent in the real allocator (timed) */
	/* meta records */
	uint32_t arg;
	uint32_t payload_len;
	const uint8_t *payload; /* valid until the next event is asked for */
	/* allocations in a file with ATR_FEAT_CHUNK_FLAGS: glibc's chunk
	 * flag bits (ATR_CHUNK_MMAPPED, ATR_CHUNK_NON_MAIN) of ret; 0
	 * otherwise */
	uint8_t chunk_flags;
	/* free, realloc/reallocarray of a large block ptr and the
	 * ATR_EV_REALLOC_RELEASE before a realloc (both carry it; apply it
	 * once), docs/TRACE_FORMAT.md, RESIDENT records: of the span_pages
	 * pages the block overlaps, resident_pages were resident when it was
	 * released (the recorder's pages, atr_info.page_size).  span_pages
	 * 0: no count. */
	uint32_t resident_pages, span_pages;
	/* allocations (every call type but free): the calls and bytes this
	 * record stands for.  A full trace: 1 and size.  A sampled trace
	 * (atr_sample_rate() > 0): 1/p and size/p for the sampling
	 * probability p = 1 - exp(-size / rate), as integers (the fractions
	 * carry to the thread's next allocation).  0 for free and meta
	 * records: a free stands for what its block did. */
	uint64_t w_calls, w_bytes;
	/* the other traced calls (ATR_XCALLS, atr_is_xcall(type)); the
	 * fields above that they use: ret (mmap, mremap: the mapping or
	 * MAP_FAILED; brk, sbrk: the break after the call), ptr (munmap,
	 * madvise: the range; mremap: the old mapping; brk, sbrk: the break
	 * before the call; malloc_usable_size: the block), size (the length:
	 * mmap, munmap, madvise, mremap's new length; malloc_trim: pad),
	 * usable (malloc_usable_size's result), err (errno of a failure) */
	uint64_t hint;	   /* mmap's addr, mremap's new_address, brk's addr */
	uint64_t old_size; /* mremap's old_size */
	uint64_t offset;   /* mmap's offset */
	uint32_t prot;	   /* mmap's prot */
	uint32_t mflags;   /* mmap's and mremap's flags */
	int32_t fd;	   /* mmap's fd */
	int32_t param;	   /* mallopt's param, madvise's advice */
	int64_t value;	   /* mallopt's value, sbrk's increment */
	int64_t result;	   /* int result (munmap, madvise, brk, sbrk: 0 or
			      -1, mallopt, malloc_trim) */
};

/* Open one trace file. On failure *out is NULL and errbuf explains
 * ("PATH: what was wrong"). */
int atr_open(const char *path, atr_file **out, char *errbuf, size_t errlen);
/* Same on a buffer the caller keeps alive (and unchanged) until
 * atr_close(); name is used in messages. */
int atr_open_buffer(const void *data, size_t size, const char *name, atr_file **out, char *errbuf,
		    size_t errlen);
void atr_close(atr_file *f);
const struct atr_info *atr_get_info(const atr_file *f);
/* Detailed message of the last error on f. */
const char *atr_last_error(const atr_file *f);
double atr_ticks_to_ns(const atr_file *f, uint64_t ticks);
/* The same as an integer, saturated at UINT64_MAX (odd calibrations can
 * make a 56-bit tick count exceed 2^64 ns). */
uint64_t atr_ticks_to_ns_u64(const atr_file *f, uint64_t ticks);

/* Per-thread facts known from block headers and THREAD_START records. */
struct atr_thread_info {
	uint32_t serial, tid;
	uint64_t blocks;
};
uint32_t atr_thread_count(const atr_file *f);
const struct atr_thread_info *atr_thread(const atr_file *f, uint32_t idx);

/* A v2 FRAME is decoded record by record straight into events (a ring of
 * decoded records runs ATR_PREFETCH_AHEAD ahead for the prefetch hook).
 * atr_set_v2_words(f, 1) decodes each frame whole into version-1 words
 * first (atr_v2_decode) and reads them as a v1 block, the path of earlier
 * releases: tests/test_v2.c and the reader's fuzz target compare the two
 * (the same events, the same frames rejected).  Set it before iterating.
 * The error of a corrupt frame is the same; without the words, the events
 * of its records before the bad one may come out before it. */
void atr_set_v2_words(atr_file *f, int on);

/* ATR_FEAT_SAMPLED: the mean number of bytes between samples, 0 for a
 * full trace (docs/TRACE_FORMAT.md, "Sampled traces"). */
uint64_t atr_sample_rate(const atr_file *f);
/* The expected calls and bytes one sampled allocation of size bytes stands
 * for at rate (1/p, size/p); rate 0: 1 and size. */
void atr_sample_weight(uint64_t rate, uint64_t size, double *calls, double *bytes);

/* Exact record count by walking all records of all threads (no merge).
 * Counts every record the iterator returns (calls and known meta records;
 * unknown meta types are skipped and not counted). */
int atr_count_records(atr_file *f, uint64_t *count);
/* The same walk; counts call records only (the malloc family and the
 * extended calls). */
int atr_count_calls(atr_file *f, uint64_t *count);
/* The same number without decoding compressed blocks (v2: their headers
 * count the calls), so it reads only the staging blocks: what `record`
 * prints at exit.  No lost/inversion statistics. */
int atr_count_calls_quick(atr_file *f, uint64_t *count);

/* Global-order iteration. next() returns 1 with *ev filled, 0 at the end,
 * or a negative atr_err (message via atr_last_error). */
typedef struct atr_iter atr_iter;
int atr_iter_new(atr_file *f, atr_iter **out);
int atr_iter_next(atr_iter *it, struct atr_event *ev);
/* The same without copying: *ev points to the iterator's own buffer,
 * valid (and unchanged) until the next call, or atr_iter_free(); a call
 * that returns 0 (the end) leaves it alone. */
int atr_iter_next_ref(atr_iter *it, const struct atr_event **ev);
void atr_iter_free(atr_iter *it);

/* ---- the narrow path: compact call records ---------------------------
 *
 * A pass that needs only the malloc family's calls (info's summary,
 * convert) reads them in batches of compact records instead of one full
 * event each: atr_iter_next_calls() copies them out of the v2 decoder's
 * ring and moves a thread's run (its records before the next other
 * thread's head) in one go, without the merge heap per record.  Records
 * that need more (meta records, extended calls, a release with a
 * RESIDENT count, the records of a sampled trace) come out as full events,
 * in the same order as atr_iter_next_ref() gives: n compact records, then
 * (*ev not NULL) one full event.  Mix it with neither atr_iter_next*()
 * nor atr_iter_new_sel() (a selection: every record comes out as an
 * event). */
struct atr_call {
	uint64_t ts;	   /* as atr_event */
	uint64_t ptr;	   /* free: the block; realloc*: the old block;
			      ATR_EV_REALLOC_RELEASE: the old block */
	uint64_t ret;	   /* allocations: the block returned (0 = failure) */
	uint64_t size;	   /* bytes requested (calloc/reallocarray: total) */
	uint64_t nmemb;	   /* calloc, reallocarray */
	uint64_t align;	   /* memalign & co. */
	uint64_t usable;   /* as atr_event */
	uint64_t duration; /* as atr_event */
	uint32_t thread, tid;
	uint32_t stack_id;
	int32_t err;	     /* posix_memalign's result */
	uint8_t type;	     /* a call type, or ATR_EV_REALLOC_RELEASE */
	uint8_t flags;	     /* ATR_FLAG_* */
	uint8_t chunk_flags; /* as atr_event */
};
/* Returns 1 with *n (<= cap) compact records in out and, if *ev is not
 * NULL, the full event that follows them (valid as atr_iter_next_ref's);
 * 0 at the end (*n 0, *ev NULL); < 0 error (after the records before
 * it came out). */
int atr_iter_next_calls(atr_iter *it, struct atr_call *out, size_t cap, size_t *n,
			const struct atr_event **ev);
/* The event of a compact record: sets the fields a call uses (type,
 * flags, thread, tid, ts, ptr, ret, size, nmemb, align, usable, err,
 * chunk_flags, stack_id, duration, w_calls, w_bytes), leaves the others
 * (clear ev once) and seq alone. */
static inline void atr_call_event(const struct atr_call *c, struct atr_event *ev)
{
	ev->type = c->type;
	ev->flags = c->flags;
	ev->thread = c->thread;
	ev->tid = c->tid;
	ev->ts = c->ts;
	ev->ptr = c->ptr;
	ev->ret = c->ret;
	ev->size = c->size;
	ev->nmemb = c->nmemb;
	ev->align = c->align;
	ev->usable = c->usable;
	ev->err = c->err;
	ev->chunk_flags = c->chunk_flags;
	ev->stack_id = c->stack_id;
	ev->duration = c->duration;
	int alloc = c->type != ATR_T_FREE && c->type <= ATR_T_CALL_LAST;
	ev->w_calls = alloc;
	ev->w_bytes = alloc ? c->size : 0;
}

/* The other way: a call's (or a release's) event as a compact record. */
static inline void atr_event_call(const struct atr_event *ev, struct atr_call *o)
{
	o->ts = ev->ts;
	o->ptr = ev->ptr;
	o->ret = ev->ret;
	o->size = ev->size;
	o->nmemb = ev->nmemb;
	o->align = ev->align;
	o->usable = ev->usable;
	o->duration = ev->duration;
	o->thread = ev->thread;
	o->tid = ev->tid;
	o->stack_id = ev->stack_id;
	o->err = ev->err;
	o->type = (uint8_t)ev->type;
	o->flags = (uint8_t)ev->flags;
	o->chunk_flags = (uint8_t)ev->chunk_flags;
}

/* A pass that keeps per-block data in a big map (src/liveset/lv_set.h)
 * misses the cache on nearly every event once millions of blocks are
 * live.  With a prefetch hook the iterator calls fn(ctx, addr) for the
 * block addresses of a thread's records (a free's ptr, an allocation's
 * ret, a realloc's old block) ATR_PREFETCH_AHEAD records before they are
 * handed out, while it walks the decoded block anyway: fn brings the
 * pass's entry into the cache (no copy of the events).  On the narrow path
 * (atr_iter_next_calls) the records of a batch are decoded straight into
 * the caller's array: fn gets their addresses as they are decoded, before
 * the batch is returned.  Set it before the first atr_iter_next*(), or
 * between two calls of them (fn NULL: no hook; a pass turns it on once its
 * map outgrows the caches, lv_prefetch_pays: records decoded before that
 * were not prefetched, which changes no result); fn must not call the
 * iterator. */
#define ATR_PREFETCH_AHEAD 16
typedef void (*atr_prefetch_fn)(void *ctx, uint64_t addr);
void atr_iter_set_prefetch(atr_iter *it, atr_prefetch_fn fn, void *ctx);

/* A second thread may decompress frames for it (atr_iter_help): the
 * reader posts the next frames of the thread it reads, and takes the
 * bytes a helper made, or makes them itself if no helper has begun (the
 * events are the same either way).  Call it before the first
 * atr_iter_next*(); it does nothing for an iterator with a selection or a
 * file without zstd frames.  0, or ATR_E_NOMEM. */
int atr_iter_set_helper(atr_iter *it);
/* From one other thread at a time, while the iterator's own thread reads
 * (the iterator must outlive the call): decompresses the frame posted
 * last, if any.  1 done, 0 nothing to do. */
int atr_iter_help(atr_iter *it);

/* Iteration restricted to some threads and a time window, using the
 * index (docs/TRACE_FORMAT.md, "The index"): a v2 frame whose thread is
 * not selected, or whose time range lies outside [from_ts, to_ts], is
 * never read or decompressed; events of decoded blocks outside the window
 * are dropped.  seq then counts the selected events only, and the walk
 * statistics of atr_get_info() are not updated.  Version-1 blocks and
 * staging blocks carry no index: they are decoded and filtered. */
struct atr_sel {
	const uint32_t *serials; /* thread serials kept; nserials 0: all */
	size_t nserials;
	uint64_t from_ts, to_ts; /* ticks since start, inclusive; to_ts
				    UINT64_MAX: no end */
};
int atr_iter_new_sel(atr_file *f, const struct atr_sel *sel, atr_iter **out);
struct atr_iter_stats {
	uint64_t blocks_decoded;  /* read (and, v2 frames, decompressed) */
	uint64_t blocks_skipped;  /* never read: other threads, outside the window */
	uint64_t records_skipped; /* records of skipped frames (from their headers) */
};
void atr_iter_get_stats(const atr_iter *it, struct atr_iter_stats *st);

/* The units a reader reads, sorted by offset: every thread's DATA blocks
 * (v2: FRAMEs), then its STAGING block if that one is read (a superseded
 * one is not, nor RETIRED blocks).  *out is malloc'd (free() it). */
struct atr_unit_ref {
	uint64_t off;
	int staging;
};
int atr_read_units(const atr_file *f, struct atr_unit_ref **out, size_t *n);

/* Name of a record type: "malloc", "free", ..., "marker". */
const char *atr_type_name(unsigned type);
/* Name of a CONTROL record's argument: "start", "stop", "pause", "resume",
 * "sync", "exit"; NULL if unknown. */
const char *atr_ctl_name(uint32_t arg);
/* Inverse of atr_type_name for call types; returns 0 if unknown. */
unsigned atr_type_from_name(const char *name);

/* ---- call stacks and modules (record --stacks) ----------------------------
 *
 * atr_stacks_load() walks the trace once (no merge) and collects every
 * STACK and MODULE record: memory grows with the number of distinct stacks
 * and modules, never with the trace.  Call it before asking for frames;
 * calling it again does nothing.  Stack ids are unique in the process;
 * two threads may name the same frames with two ids: atr_stack_canonical()
 * maps every id to the first id with identical frames, so tools can group
 * by it. */
int atr_stacks_load(atr_file *f);
/* Distinct stack ids defined in the trace. */
size_t atr_stack_count(const atr_file *f);
/* Frames of a stack: return addresses, innermost (the allocator's caller)
 * first; symbolize ip - 1.  Returns 1, or 0 (and NULL, 0) for an unknown
 * id or id 0.  The array lives until atr_close(). */
int atr_stack_get(const atr_file *f, uint32_t id, const uint64_t **ips, uint32_t *n);
/* One id for all ids with identical frames (the first definition found;
 * id itself if its frames are unique); 0 for an unknown id. */
uint32_t atr_stack_canonical(const atr_file *f, uint32_t id);

/* A module mapped in the process (MODULE records).  path is the header's
 * exe for the main program (main_program = 1).  Times are ticks. */
struct atr_module {
	uint64_t start, size; /* address range of its PT_LOAD segments */
	uint64_t bias;	      /* address = ELF virtual address + bias */
	const uint8_t *build_id;
	uint32_t build_id_len; /* 0 if unknown */
	const char *path;
	uint64_t load_ts, unload_ts; /* unload_ts UINT64_MAX: never unloaded */
	int main_program;
};
size_t atr_module_count(const atr_file *f);
const struct atr_module *atr_module_get(const atr_file *f, size_t idx);
/* Index of the module holding address ip as mapped when stack_id was
 * recorded (any module holding it if none was mapped then), or -1. */
long atr_module_find(const atr_file *f, uint64_t ip, uint32_t stack_id);

/* The traces named by path: a file gives itself; a directory gives its
 * *.atr files sorted by process start time, then pid.  The returned list
 * and its strings are freed with atr_list_free(). */
int atr_list(const char *path, char ***paths, size_t *n, char *errbuf, size_t errlen);
void atr_list_free(char **paths, size_t n);

/* buf holds n bytes of a trace file from offset off: if they include the
 * header's status word, set its SNAPSHOT bit there (`alloctrace snapshot`
 * marks its copy of a live process's file while copying it). */
void atr_mark_snapshot(void *buf, uint64_t off, size_t n);

#endif
