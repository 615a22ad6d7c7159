/* dump.c - `alloctrace dump FILE_OR_DIR... [--json]`: every record. */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h> /* optind */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <malloc.h>

#include "analysis/an_session.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "util_json.h"
#include "util_msg.h"

static void dump_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace dump [--json] [--thread T] [--from S] [--to S]\n"
		     "                      [--seek-stats] FILE_OR_DIR...\n"
		     "Print every record of each process in global time order, one per line:\n"
		     "  SEQ  SECONDS Tn call(args) = result [usable=N] [stack=N]\n"
		     "       [resident=PAGES/SPAN] [dur=Nns]\n"
		     "with a '#' header line per process.  Times are seconds since the\n"
		     "process started.\n"
		     "  --json   JSON Lines: one object per record (keys seq, ts_ns, pid,\n"
		     "           thread, tid, type, then type-specific: ptr, ret, size,\n"
		     "           nmemb, align, usable, stack, err, resident_pages,\n"
		     "           span_pages, duration_ns, label, ...);\n"
		     "           pointers are strings \"0x...\", sizes are numbers\n"
		     "  --thread T  records of that thread only: kernel tid, or T<serial>\n"
		     "           (repeat for several)\n"
		     "  --from S, --to S  records from/to S seconds since the trace began\n"
		     "  With these, v2 frames of other threads or times are skipped by the\n"
		     "  index without being read; SEQ then counts the selected records.\n"
		     "  --seek-stats  on stderr: blocks decoded and skipped per process\n");
}

static uint64_t to_ns(const atr_file *f, uint64_t ticks)
{
	return atr_ticks_to_ns_u64(f, ticks);
}

static uint64_t payload_u64(const struct atr_event *ev)
{
	uint64_t v = 0;
	if (ev->payload_len >= 8)
		memcpy(&v, ev->payload, 8);
	return v;
}

static void put_ptr(FILE *o, uint64_t p)
{
	if (p)
		fprintf(o, "0x%" PRIx64, p);
	else
		fputs("NULL", o);
}

/* label bytes as a C-ish quoted string */
static void put_label(FILE *o, const uint8_t *p, uint32_t n)
{
	fputc('"', o);
	for (uint32_t i = 0; i < n; i++) {
		unsigned c = p[i];
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(o, "\\x%02x", c);
		else
			fputc((int)c, o);
	}
	fputc('"', o);
}

/* Names of flag bits (a | b | 0x..) or of a value, for the other calls. */
struct dump_name {
	uint64_t v;
	const char *name;
};
static const struct dump_name prot_names[] = {
    {PROT_READ, "READ"}, {PROT_WRITE, "WRITE"}, {PROT_EXEC, "EXEC"}, {0, NULL}};
static const struct dump_name map_names[] = {
    {MAP_SHARED, "SHARED"},	  {MAP_PRIVATE, "PRIVATE"},
    {MAP_FIXED, "FIXED"},	  {MAP_ANONYMOUS, "ANONYMOUS"},
    {MAP_NORESERVE, "NORESERVE"}, {MAP_POPULATE, "POPULATE"},
    {MAP_STACK, "STACK"},	  {MAP_HUGETLB, "HUGETLB"},
    {MAP_GROWSDOWN, "GROWSDOWN"}, {0, NULL}};
static const struct dump_name mremap_names[] = {
    {1, "MAYMOVE"}, {2, "FIXED"}, {4, "DONTUNMAP"} /* linux/mman.h */, {0, NULL}};
static const struct dump_name advice_names[] = {{MADV_NORMAL, "NORMAL"},
						{MADV_RANDOM, "RANDOM"},
						{MADV_SEQUENTIAL, "SEQUENTIAL"},
						{MADV_WILLNEED, "WILLNEED"},
						{MADV_DONTNEED, "DONTNEED"},
						{MADV_FREE, "FREE"},
						{MADV_REMOVE, "REMOVE"},
						{MADV_DONTFORK, "DONTFORK"},
						{MADV_DOFORK, "DOFORK"},
						{MADV_MERGEABLE, "MERGEABLE"},
						{MADV_HUGEPAGE, "HUGEPAGE"},
						{MADV_NOHUGEPAGE, "NOHUGEPAGE"},
						{MADV_DONTDUMP, "DONTDUMP"},
						{MADV_DODUMP, "DODUMP"},
						{20, "COLD"},
						{21, "PAGEOUT"},
						{MADV_UNMERGEABLE, "UNMERGEABLE"},
						{0, NULL}};
/* glibc's mallopt parameters (malloc.h) */
static const struct dump_name mallopt_names[] = {
    {(uint64_t)M_MXFAST, "M_MXFAST"},	    {(uint64_t)M_TRIM_THRESHOLD, "M_TRIM_THRESHOLD"},
    {(uint64_t)M_TOP_PAD, "M_TOP_PAD"},	    {(uint64_t)M_MMAP_THRESHOLD, "M_MMAP_THRESHOLD"},
    {(uint64_t)M_MMAP_MAX, "M_MMAP_MAX"},   {(uint64_t)M_CHECK_ACTION, "M_CHECK_ACTION"},
    {(uint64_t)M_PERTURB, "M_PERTURB"},	    {(uint64_t)M_ARENA_TEST, "M_ARENA_TEST"},
    {(uint64_t)M_ARENA_MAX, "M_ARENA_MAX"}, {0, NULL}};

static void put_bits(FILE *o, uint64_t v, const struct dump_name *t)
{
	int any = 0;
	for (; t->name; t++)
		if (t->v && (v & t->v) == t->v) {
			fprintf(o, "%s%s", any++ ? "|" : "", t->name);
			v &= ~t->v;
		}
	if (v || !any)
		fprintf(o, any ? "|0x%" PRIx64 : "0x%" PRIx64, v);
}

static void put_value(FILE *o, uint64_t v, const struct dump_name *t)
{
	for (; t->name; t++)
		if (t->v == v) {
			fputs(t->name, o);
			return;
		}
	fprintf(o, "%" PRId64, (int64_t)v);
}

/* An ATR_XCALLS event as the C call: name(args) = result. */
static void text_xcall(FILE *o, const atr_file *f, const struct atr_event *ev, const char *name)
{
	fprintf(o, "%s(", name);
	switch (ev->type) {
	case ATR_T_MMAP:
		put_ptr(o, ev->hint);
		fprintf(o, ", %" PRIu64 ", ", ev->size);
		put_bits(o, ev->prot, prot_names);
		fputs(", ", o);
		put_bits(o, ev->mflags, map_names);
		fprintf(o, ", %" PRId32 ", %" PRIu64 ") = ", ev->fd, ev->offset);
		put_ptr(o, ev->ret);
		break;
	case ATR_T_MREMAP:
		put_ptr(o, ev->ptr);
		fprintf(o, ", %" PRIu64 ", %" PRIu64 ", ", ev->old_size, ev->size);
		put_bits(o, ev->mflags, mremap_names);
		if (ev->mflags & 6u) { /* FIXED, DONTUNMAP: new_address given */
			fputs(", ", o);
			put_ptr(o, ev->hint);
		}
		fputs(") = ", o);
		put_ptr(o, ev->ret);
		break;
	case ATR_T_MUNMAP:
	case ATR_T_MADVISE:
		put_ptr(o, ev->ptr);
		fprintf(o, ", %" PRIu64, ev->size);
		if (ev->type == ATR_T_MADVISE) {
			fputs(", ", o);
			put_value(o, (uint64_t)(int64_t)ev->param, advice_names);
		}
		fprintf(o, ") = %" PRId64, ev->result);
		break;
	case ATR_T_BRK_CALL:
	case ATR_T_SBRK:
		if (ev->type == ATR_T_BRK_CALL)
			put_ptr(o, ev->hint);
		else
			fprintf(o, "%" PRId64, ev->value);
		fputs(") = ", o);
		if (ev->type == ATR_T_SBRK && !ev->result)
			put_ptr(o, ev->ptr);
		else
			fprintf(o, "%" PRId64, ev->result);
		fputs(" break ", o);
		put_ptr(o, ev->ptr);
		fputs(" -> ", o);
		put_ptr(o, ev->ret);
		break;
	case ATR_T_MALLOPT:
		put_value(o, (uint64_t)(int64_t)ev->param, mallopt_names);
		fprintf(o, ", %" PRId64 ") = %" PRId64, ev->value, ev->result);
		break;
	case ATR_T_MALLOC_TRIM:
		fprintf(o, "%" PRIu64 ") = %" PRId64, ev->size, ev->result);
		break;
	case ATR_T_MALLOC_USABLE_SIZE:
		put_ptr(o, ev->ptr);
		fprintf(o, ") = %" PRIu64, ev->usable);
		break;
	default:
		fputc(')', o);
		break;
	}
	if (ev->err)
		fprintf(o, " err=%" PRId32 " (%s)", ev->err, strerror(ev->err));
	if (ev->stack_id)
		fprintf(o, " stack=%" PRIu32, ev->stack_id);
	if (ev->flags & ATR_FLAG_TIMED)
		fprintf(o, " dur=%" PRIu64 "ns", to_ns(f, ev->duration));
	fputc('\n', o);
}

static void text_event(FILE *o, const atr_file *f, const struct atr_event *ev)
{
	uint64_t ns = to_ns(f, ev->ts);
	fprintf(o, "%7" PRIu64 "  %" PRIu64 ".%09" PRIu64 " T%" PRIu32 " ", ev->seq,
		ns / UINT64_C(1000000000), ns % UINT64_C(1000000000), ev->thread);
	const char *name = atr_type_name(ev->type);
	if (atr_is_xcall(ev->type)) {
		text_xcall(o, f, ev, name);
		return;
	}
	int alloc = 1;
	unsigned shape = atr_call_args(ev->type);
	switch (shape) {
	case ATR_ARGS_SIZE:
		fprintf(o, "%s(%" PRIu64 ")", name, ev->size);
		break;
	case ATR_ARGS_PTR:
		fprintf(o, "%s(", name);
		put_ptr(o, ev->ptr);
		fputc(')', o);
		alloc = 0;
		break;
	case ATR_ARGS_NMEMB:
		if (ev->nmemb && ev->size % ev->nmemb == 0)
			fprintf(o, "%s(%" PRIu64 ", %" PRIu64 ")", name, ev->nmemb,
				ev->size / ev->nmemb);
		else
			fprintf(o, "%s(%" PRIu64 ", ?) total=%" PRIu64, name, ev->nmemb, ev->size);
		break;
	case ATR_ARGS_OLD:
		fprintf(o, "%s(", name);
		put_ptr(o, ev->ptr);
		fprintf(o, ", %" PRIu64 ")", ev->size);
		break;
	case ATR_ARGS_OLD_NMEMB:
		fprintf(o, "%s(", name);
		put_ptr(o, ev->ptr);
		if (ev->nmemb && ev->size % ev->nmemb == 0)
			fprintf(o, ", %" PRIu64 ", %" PRIu64 ")", ev->nmemb, ev->size / ev->nmemb);
		else
			fprintf(o, ", %" PRIu64 ", ?) total=%" PRIu64, ev->nmemb, ev->size);
		break;
	case ATR_ARGS_ALIGN:
	case ATR_ARGS_ALIGN_OUT:
		fprintf(o, "%s(%" PRIu64 ", %" PRIu64 ")", name, ev->align, ev->size);
		break;
	default:
		alloc = 0;
		break;
	}
	if (ev->type <= ATR_T_CALL_LAST) {
		if (alloc) {
			fputs(" = ", o);
			put_ptr(o, ev->ret);
			if (shape == ATR_ARGS_ALIGN_OUT && ev->err)
				fprintf(o, " err=%" PRId32 " (%s)", ev->err, strerror(ev->err));
			if (ev->ret) {
				if (ev->usable == UINT64_MAX)
					fputs(" usable=?", o);
				else
					fprintf(o, " usable=%" PRIu64, ev->usable);
			}
			if (ev->stack_id)
				fprintf(o, " stack=%" PRIu32, ev->stack_id);
		}
		if (ev->span_pages) /* the released (old) block's, RESIDENT */
			fprintf(o, " resident=%" PRIu32 "/%" PRIu32, ev->resident_pages,
				ev->span_pages);
		if (ev->flags & ATR_FLAG_TIMED)
			fprintf(o, " dur=%" PRIu64 "ns", to_ns(f, ev->duration));
		fputc('\n', o);
		return;
	}
	switch (ev->type) {
	case ATR_T_THREAD_START:
		fprintf(o, "thread start tid=%" PRIu32 "\n", ev->arg);
		break;
	case ATR_T_THREAD_EXIT:
		fprintf(o, "thread exit tid=%" PRIu32 "\n", ev->arg);
		break;
	case ATR_T_MARKER:
		fputs("marker ", o);
		put_label(o, ev->payload, ev->payload_len);
		fputc('\n', o);
		break;
	case ATR_T_CONTROL: {
		const char *c = atr_ctl_name(ev->arg);
		if (c)
			fprintf(o, "control %s\n", c);
		else
			fprintf(o, "control %" PRIu32 "\n", ev->arg);
		break;
	}
	case ATR_T_LOST:
		fprintf(o, "lost %" PRIu64 " records\n", payload_u64(ev));
		break;
	case ATR_T_RECORDER:
		fprintf(o, "recorder %" PRIu64 "ns\n", to_ns(f, payload_u64(ev)));
		break;
	case ATR_T_CPU:
		if (ev->payload_len >= 24) {
			uint64_t v[3];
			memcpy(v, ev->payload, 24);
			fprintf(o,
				"cpu %.6f s, switches %" PRIu64 " voluntary %" PRIu64
				" involuntary\n",
				(double)v[0] / 1e9, v[1], v[2]);
			break;
		}
		fprintf(o, "%s arg=%" PRIu32 "\n", name, ev->arg);
		break;
	case ATR_T_STACK:
		fprintf(o, "stack %" PRIu32 ":", ev->arg);
		for (uint32_t i = 0; i + 8 <= ev->payload_len; i += 8) {
			uint64_t ip;
			memcpy(&ip, ev->payload + i, 8);
			fprintf(o, " 0x%" PRIx64, ip);
		}
		fputc('\n', o);
		break;
	case ATR_T_MODULE:
		if (ev->payload_len >= ATR_MOD_DATA) {
			uint64_t start, size;
			uint32_t bl, pl;
			memcpy(&start, ev->payload + ATR_MOD_START, 8);
			memcpy(&size, ev->payload + ATR_MOD_SIZE, 8);
			memcpy(&bl, ev->payload + ATR_MOD_BUILD_ID_LEN, 4);
			memcpy(&pl, ev->payload + ATR_MOD_PATH_LEN, 4);
			fprintf(o, "module %s 0x%" PRIx64 "-0x%" PRIx64 " ",
				ev->arg == ATR_MOD_LOAD ? "load" : "unload", start, start + size);
			if ((uint64_t)ATR_MOD_DATA + bl + pl <= ev->payload_len)
				put_label(o, ev->payload + ATR_MOD_DATA + bl, pl);
			fputc('\n', o);
			break;
		}
		fprintf(o, "%s arg=%" PRIu32 "\n", name, ev->arg);
		break;
	case ATR_T_BRK:
	case ATR_T_HEAP:
		/* glibc (docs/ARENAS.md): brk: initial, current break; heap:
		 * start, heap_info.ar_ptr, heap_info.size */
		if (ev->payload_len >= (ev->type == ATR_T_BRK ? 16u : 24u)) {
			uint64_t w[3] = {0, 0, 0};
			memcpy(w, ev->payload, ev->type == ATR_T_BRK ? 16 : 24);
			if (ev->type == ATR_T_BRK)
				fprintf(o, "break 0x%" PRIx64 " (+%" PRId64 " since start)\n", w[1],
					(int64_t)(w[1] - w[0]));
			else
				fprintf(o,
					"heap 0x%" PRIx64 " arena 0x%" PRIx64 " size %" PRIu64 "\n",
					w[0], w[1], w[2]);
			break;
		}
		fprintf(o, "%s arg=%" PRIu32 "\n", name, ev->arg);
		break;
	default:
		fprintf(o, "%s arg=%" PRIu32 "\n", name, ev->arg);
		break;
	}
}

static void json_ptr(struct json_writer *w, const char *key, uint64_t p)
{
	char b[24];
	snprintf(b, sizeof(b), "0x%" PRIx64, p);
	json_key(w, key);
	json_string(w, b);
}

static void json_num(struct json_writer *w, const char *key, uint64_t v)
{
	json_key(w, key);
	json_u64(w, v);
}

/* The fields of an ATR_XCALLS event (docs/CLI.md, dump --json). */
static void json_xcall(struct json_writer *w, const atr_file *f, const struct atr_event *ev)
{
	switch (ev->type) {
	case ATR_T_MMAP:
		json_ptr(w, "addr", ev->hint);
		json_num(w, "size", ev->size);
		json_num(w, "prot", ev->prot);
		json_num(w, "flags", ev->mflags);
		json_key(w, "fd");
		json_i64(w, ev->fd);
		json_num(w, "offset", ev->offset);
		json_ptr(w, "ret", ev->ret);
		break;
	case ATR_T_MREMAP:
		json_ptr(w, "ptr", ev->ptr);
		json_num(w, "old_size", ev->old_size);
		json_num(w, "size", ev->size);
		json_num(w, "flags", ev->mflags);
		json_ptr(w, "new_addr", ev->hint);
		json_ptr(w, "ret", ev->ret);
		break;
	case ATR_T_MUNMAP:
	case ATR_T_MADVISE:
		json_ptr(w, "ptr", ev->ptr);
		json_num(w, "size", ev->size);
		if (ev->type == ATR_T_MADVISE) {
			json_key(w, "advice");
			json_i64(w, ev->param);
		}
		break;
	case ATR_T_BRK_CALL:
	case ATR_T_SBRK:
		if (ev->type == ATR_T_BRK_CALL) {
			json_ptr(w, "addr", ev->hint);
		} else {
			json_key(w, "increment");
			json_i64(w, ev->value);
		}
		json_ptr(w, "break_before", ev->ptr);
		json_ptr(w, "break_after", ev->ret);
		break;
	case ATR_T_MALLOPT:
		json_key(w, "param");
		json_i64(w, ev->param);
		json_key(w, "value");
		json_i64(w, ev->value);
		break;
	case ATR_T_MALLOC_TRIM:
		json_num(w, "pad", ev->size);
		break;
	case ATR_T_MALLOC_USABLE_SIZE:
		json_ptr(w, "ptr", ev->ptr);
		json_num(w, "usable", ev->usable);
		break;
	default:
		break;
	}
	if (ev->type != ATR_T_MMAP && ev->type != ATR_T_MREMAP &&
	    ev->type != ATR_T_MALLOC_USABLE_SIZE) {
		json_key(w, "result");
		json_i64(w, ev->result);
	}
	json_key(w, "err");
	json_i64(w, ev->err);
	json_num(w, "stack", ev->stack_id);
	if (ev->flags & ATR_FLAG_TIMED)
		json_num(w, "duration_ns", to_ns(f, ev->duration));
}

static void json_event(struct json_writer *w, const atr_file *f, const struct atr_event *ev)
{
	const struct atr_info *in = atr_get_info(f);
	json_begin_object(w);
	json_num(w, "seq", ev->seq);
	json_num(w, "ts_ns", to_ns(f, ev->ts));
	json_num(w, "pid", in->pid);
	json_num(w, "thread", ev->thread);
	json_num(w, "tid", ev->tid);
	json_key(w, "type");
	json_string(w, atr_type_name(ev->type));
	if (atr_is_xcall(ev->type)) {
		json_xcall(w, f, ev);
	} else if (ev->type <= ATR_T_CALL_LAST) {
		unsigned shape = atr_call_args(ev->type);
		if (shape == ATR_ARGS_PTR) {
			json_ptr(w, "ptr", ev->ptr);
		} else {
			if (shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB)
				json_ptr(w, "ptr", ev->ptr);
			json_num(w, "size", ev->size);
			if (shape == ATR_ARGS_NMEMB || shape == ATR_ARGS_OLD_NMEMB)
				json_num(w, "nmemb", ev->nmemb);
			if (shape == ATR_ARGS_ALIGN || shape == ATR_ARGS_ALIGN_OUT)
				json_num(w, "align", ev->align);
			json_ptr(w, "ret", ev->ret);
			json_key(w, "usable");
			if (ev->ret && ev->usable != UINT64_MAX)
				json_u64(w, ev->usable);
			else
				json_null(w);
			json_num(w, "stack", ev->stack_id);
			if (shape == ATR_ARGS_ALIGN_OUT) {
				json_key(w, "err");
				json_i64(w, ev->err);
			}
		}
		if (ev->span_pages) {
			json_num(w, "resident_pages", ev->resident_pages);
			json_num(w, "span_pages", ev->span_pages);
		}
		if (ev->flags & ATR_FLAG_TIMED)
			json_num(w, "duration_ns", to_ns(f, ev->duration));
	} else {
		switch (ev->type) {
		case ATR_T_THREAD_START:
			json_ptr(w, "pthread", payload_u64(ev));
			break;
		case ATR_T_MARKER:
			json_key(w, "label");
			json_string_n(w, (const char *)ev->payload, ev->payload_len);
			break;
		case ATR_T_CONTROL: {
			const char *c = atr_ctl_name(ev->arg);
			json_key(w, "control");
			if (c)
				json_string(w, c);
			else
				json_u64(w, ev->arg);
			break;
		}
		case ATR_T_LOST:
			json_num(w, "count", payload_u64(ev));
			break;
		case ATR_T_RECORDER:
			json_num(w, "recorder_ns", to_ns(f, payload_u64(ev)));
			break;
		case ATR_T_CPU:
			if (ev->payload_len >= 24) {
				uint64_t v[3];
				memcpy(v, ev->payload, 24);
				json_num(w, "cpu_ns", v[0]);
				json_num(w, "voluntary_switches", v[1]);
				json_num(w, "involuntary_switches", v[2]);
			}
			break;
		default:
			break;
		}
	}
	json_end_object(w);
	json_finish(w);
}

struct dump_opts {
	int json, seek_stats;
	struct an_session_opts sel; /* --thread --from --to, parsed as report does */
};

/* The selection in this file's terms: serials and ticks. */
static int dump_sel(atr_file *f, const struct an_session_opts *o, struct atr_sel *sel,
		    uint32_t *serials)
{
	const struct an_filter *flt = &o->flt;
	memset(sel, 0, sizeof(*sel));
	sel->to_ts = UINT64_MAX;
	double tps = atr_get_info(f)->ticks_per_sec;
	if (flt->have_from) {
		double t = flt->from_s * tps;
		sel->from_ts = t <= 0 ? 0 : t >= 1.8e19 ? UINT64_MAX : (uint64_t)t;
	}
	if (flt->have_to) {
		double t = flt->to_s * tps;
		sel->to_ts = t <= 0 ? 0 : t >= 1.8e19 ? UINT64_MAX : (uint64_t)t;
	}
	size_t n = 0;
	for (uint32_t i = 0; i < atr_thread_count(f) && flt->nthreads; i++) {
		const struct atr_thread_info *ti = atr_thread(f, i);
		for (size_t k = 0; k < flt->nthreads; k++) {
			uint32_t t = flt->threads[k];
			if ((t & AN_FILTER_SERIAL) ? (t & ~AN_FILTER_SERIAL) == ti->serial
						   : t == ti->tid) {
				serials[n++] = ti->serial;
				break;
			}
		}
	}
	sel->serials = serials;
	sel->nserials = n;
	/* threads asked for that this process does not have: select none */
	return flt->nthreads && n == 0 ? 0 : 1;
}

static int dump_file(const char *path, const struct dump_opts *o)
{
	int json = o->json;
	char eb[512];
	atr_file *f;
	if (atr_open(path, &f, eb, sizeof(eb)) < 0) {
		util_err("%s", eb);
		return 1;
	}
	const struct atr_info *in = atr_get_info(f);
	if (!json)
		printf("# process %" PRIu32 " (ppid %" PRIu32 ", exec %" PRIu32 ") %s: %s\n",
		       in->pid, in->ppid, in->exec_seq, in->path,
		       in->cmdline[0] ? in->cmdline : in->exe);
	atr_iter *it;
	int r;
	uint32_t *serials = NULL;
	if (o->sel.any_filter) {
		struct atr_sel sel;
		serials = malloc((atr_thread_count(f) + 1) * sizeof(*serials));
		if (!serials)
			util_die_nomem();
		if (!dump_sel(f, &o->sel, &sel, serials)) {
			free(serials);
			atr_close(f);
			return 0;
		}
		r = atr_iter_new_sel(f, &sel, &it);
	} else {
		r = atr_iter_new(f, &it);
	}
	struct atr_event ev;
	struct json_writer w;
	json_init(&w, stdout, 0);
	while (r >= 0 && (r = atr_iter_next(it, &ev)) > 0) {
		if (ev.type == ATR_EV_REALLOC_RELEASE)
			continue; /* not a record: dump shows records */
		if (json)
			json_event(&w, f, &ev);
		else
			text_event(stdout, f, &ev);
	}
	if (r < 0)
		util_err("%s", r == ATR_E_NOMEM ? "out of memory" : atr_last_error(f));
	if (o->seek_stats && r >= 0) {
		struct atr_iter_stats st;
		atr_iter_get_stats(it, &st);
		fprintf(stderr,
			"%s: dump: %s: %" PRIu64 " block(s) decoded, %" PRIu64
			" left unread (%" PRIu64 " records, by the index)\n",
			util_msg_prog(), path, st.blocks_decoded, st.blocks_skipped,
			st.records_skipped);
	}
	atr_iter_free(it);
	free(serials);
	atr_close(f);
	return r < 0;
}

static int dump_one(void *arg, const char *path)
{
	return dump_file(path, arg);
}

int cmd_dump(int argc, char **argv)
{
	enum { O_SEEK = 256 };
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"thread", required_argument, NULL, REP_OPT_BASE + 2},
	    {"from", required_argument, NULL, REP_OPT_BASE + 3},
	    {"to", required_argument, NULL, REP_OPT_BASE + 4},
	    {"seek-stats", no_argument, NULL, O_SEEK},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct dump_opts o = {0};
	an_session_opts_init(&o.sel);
	int c, rc = 0;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "jh", opts, NULL)) != -1) {
		if (c == 'j') {
			o.json = 1;
		} else if (c == O_SEEK) {
			o.seek_stats = 1;
		} else if (c == 'h') {
			dump_usage(stdout);
			an_session_opts_free(&o.sel);
			return 0;
		} else if (c >= REP_OPT_BASE) {
			if (cmdu_session_opt(&o.sel, c, optarg, "dump") < 0) {
				rc = 2;
				break;
			}
			if (o.sel.flt.from_label || o.sel.flt.to_label) {
				util_err("dump: --from/--to take seconds here (a marker label "
					 "needs the whole trace: use report)");
				rc = 2;
				break;
			}
		} else {
			dump_usage(stderr);
			rc = 2;
			break;
		}
	}
	if (!rc && optind >= argc) {
		util_err("dump: no trace file or directory given");
		dump_usage(stderr);
		rc = 2;
	}
	if (!rc)
		rc = cmdu_each_trace(argc - optind, argv + optind, dump_one, &o);
	an_session_opts_free(&o.sel);
	return rc == 2 ? 2 : rc | cmdu_flush_stdout("dump");
}
