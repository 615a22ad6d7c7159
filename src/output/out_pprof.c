/* out_pprof.c - export --format pprof: profile.proto, gzip'd:
 * alloc_objects/alloc_space/inuse_objects/inuse_space per call stack
 * (`pprof -http`, docs/EXPORT.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATR_HAVE_ZLIB
#include <zlib.h>
#endif

#include "output/output.h"
#include "util_buf.h"
#include "util_hmap.h"
#include "util_pb.h"
#include "util_strtab.h"

/* ---- pprof (profile.proto) ---------------------------------------------------- */

struct pprof_state {
	struct an_session *c;
	struct util_strtab strs;
	struct util_hmap loc_by_ip;  /* ip -> location id */
	struct util_hmap fn_by_key;  /* (name idx << 32 | file idx) -> function id */
	struct util_hmap map_by_mod; /* module index -> mapping id */
	struct util_pb locs, fns, maps;
	uint64_t nloc, nfn, nmap;
	int nomem;
};

static int64_t str_id(struct pprof_state *s, const char *str)
{
	long i = util_str_intern(&s->strs, str ? str : "");
	if (i < 0) {
		s->nomem = 1;
		return 0;
	}
	return i;
}

static uint64_t mapping_of(struct pprof_state *s, uint64_t ip, uint32_t stack)
{
	long m = atr_module_find(s->c->f, ip, stack);
	if (m < 0)
		return 0;
	uint64_t id;
	if (util_hmap_lookup(&s->map_by_mod, (uint64_t)m, &id))
		return id;
	const struct atr_module *md = atr_module_get(s->c->f, (size_t)m);
	id = ++s->nmap;
	if (util_hmap_insert(&s->map_by_mod, (uint64_t)m, id, NULL) < 0)
		s->nomem = 1;
	char bid[2 * 64 + 1] = "";
	for (uint32_t i = 0; i < md->build_id_len && i < 64; i++)
		snprintf(bid + 2 * i, 3, "%02x", md->build_id[i]);
	struct util_pb mp = {0};
	util_pb_uint(&mp, 1, id);
	util_pb_uint(&mp, 2, md->start);
	util_pb_uint(&mp, 3, md->start + md->size);
	/* ELF address = address - bias; pprof computes address - start + offset */
	util_pb_uint(&mp, 4, md->start - md->bias);
	util_pb_uint(&mp, 5, (uint64_t)str_id(s, md->path));
	util_pb_uint(&mp, 6, (uint64_t)str_id(s, bid));
	util_pb_uint(&mp, 7, 1);  /* has_functions */
	util_pb_uint(&mp, 8, 1);  /* has_filenames */
	util_pb_uint(&mp, 9, 1);  /* has_line_numbers */
	util_pb_uint(&mp, 10, 1); /* has_inline_frames */
	util_pb_msg(&s->maps, 3, &mp);
	return id;
}

static uint64_t function_of(struct pprof_state *s, const struct an_frame *fr)
{
	int64_t name = str_id(s, fr->function), file = str_id(s, fr->file ? fr->file : "");
	uint64_t key = (uint64_t)name << 32 | (uint64_t)file, id;
	if (util_hmap_lookup(&s->fn_by_key, key, &id))
		return id;
	id = ++s->nfn;
	if (util_hmap_insert(&s->fn_by_key, key, id, NULL) < 0)
		s->nomem = 1;
	struct util_pb f = {0};
	util_pb_uint(&f, 1, id);
	util_pb_uint(&f, 2, (uint64_t)name);
	util_pb_uint(&f, 3, (uint64_t)name); /* system_name */
	util_pb_uint(&f, 4, (uint64_t)file);
	util_pb_msg(&s->fns, 5, &f);
	return id;
}

static uint64_t location_of(struct pprof_state *s, uint64_t ip, uint32_t stack)
{
	uint64_t id;
	if (util_hmap_lookup(&s->loc_by_ip, ip, &id))
		return id;
	id = ++s->nloc;
	if (util_hmap_insert(&s->loc_by_ip, ip, id, NULL) < 0)
		s->nomem = 1;
	struct util_pb l = {0};
	util_pb_uint(&l, 1, id);
	util_pb_uint(&l, 2, mapping_of(s, ip, stack));
	util_pb_uint(&l, 3, ip ? ip - 1 : 0); /* the call instruction */
	const struct an_frame *fr;
	unsigned k = an_symbols_resolve(s->c->sym, ip, stack, &fr);
	/* Line entries: innermost (inlined) first, the caller last */
	for (unsigned j = 0; j < k; j++) {
		if (!fr[j].function)
			continue;
		struct util_pb ln = {0};
		util_pb_uint(&ln, 1, function_of(s, &fr[j]));
		util_pb_uint(&ln, 2, fr[j].line);
		util_pb_msg(&l, 4, &ln);
	}
	util_pb_msg(&s->locs, 4, &l);
	return id;
}

/* 0, ATR_E_NOMEM (zlib's state) or ATR_E_WRITE. */
static int gzip_out(FILE *out, const void *data, size_t len)
{
#ifdef ATR_HAVE_ZLIB
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return ATR_E_NOMEM;
	unsigned char buf[65536];
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)len; /* profiles stay far below 4 GiB */
	int rc;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR)
			break;
		size_t n = sizeof(buf) - z.avail_out;
		if (fwrite(buf, 1, n, out) != n)
			break;
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	return rc == Z_STREAM_END && !ferror(out) ? 0 : ATR_E_WRITE;
#else
	/* pprof reads an uncompressed profile too */
	return fwrite(data, 1, len, out) == len ? 0 : ATR_E_WRITE;
#endif
}

int out_pprof_write(FILE *out, struct an_session *c)
{
	struct pprof_state s;
	memset(&s, 0, sizeof(s));
	s.c = c;
	str_id(&s, ""); /* string_table[0] must be "" */
	struct util_pb prof = {0}, samples = {0};
	static const char *const types[4][2] = {{"alloc_objects", "count"},
						{"alloc_space", "bytes"},
						{"inuse_objects", "count"},
						{"inuse_space", "bytes"}};
	for (int i = 0; i < 4; i++) {
		struct util_pb vt = {0};
		util_pb_uint(&vt, 1, (uint64_t)str_id(&s, types[i][0]));
		util_pb_uint(&vt, 2, (uint64_t)str_id(&s, types[i][1]));
		util_pb_msg(&prof, 1, &vt);
	}
	uint64_t *lids = NULL;
	size_t lcap = 0;
	for (size_t i = 0; i < c->r.nst; i++) {
		const struct an_stack_stat *st = &c->r.st[i];
		if (!st->calls && !st->live_blocks)
			continue;
		const uint64_t *ips;
		uint32_t n = 0;
		if (!atr_stack_get(c->f, st->stack, &ips, &n))
			n = 0;
		if (n > lcap) {
			uint64_t *nl = realloc(lids, n * sizeof(*nl));
			if (!nl) {
				s.nomem = 1;
				break;
			}
			lids = nl;
			lcap = n;
		}
		for (uint32_t k = 0; k < n; k++) /* leaf first, as pprof wants */
			lids[k] = location_of(&s, ips[k], st->stack);
		struct util_pb sm = {0};
		util_pb_packed(&sm, 1, lids, n);
		uint64_t v[4] = {st->calls, st->bytes, st->live_blocks, st->live_bytes};
		util_pb_packed(&sm, 2, v, 4);
		util_pb_msg(&samples, 2, &sm);
	}
	free(lids);
	util_pb_raw(&prof, samples.b.data ? samples.b.data : "", samples.b.len);
	util_pb_raw(&prof, s.maps.b.data ? s.maps.b.data : "", s.maps.b.len);
	util_pb_raw(&prof, s.locs.b.data ? s.locs.b.data : "", s.locs.b.len);
	util_pb_raw(&prof, s.fns.b.data ? s.fns.b.data : "", s.fns.b.len);
	const struct atr_info *in = atr_get_info(c->f);
	int64_t dflt = str_id(&s, "alloc_space");
	struct util_pb pt = {0};
	util_pb_uint(&pt, 1, (uint64_t)str_id(&s, "space"));
	util_pb_uint(&pt, 2, (uint64_t)str_id(&s, "bytes"));
	char note[160];
	if (c->r.sample_rate)
		snprintf(note, sizeof note,
			 "alloctrace export --format pprof; inuse = live at exit; ESTIMATES "
			 "from a sampled trace (one allocation per %" PRIu64 " bytes)",
			 c->r.sample_rate);
	else
		snprintf(note, sizeof note,
			 "alloctrace export --format pprof; inuse = live at exit");
	int64_t comment = str_id(&s, note);
	/* the string table last: everything above interned its strings */
	for (size_t i = 0; i < s.strs.n; i++)
		util_pb_bytes(&prof, 6, s.strs.s[i], strlen(s.strs.s[i]));
	util_pb_uint(&prof, 9, in->start_realtime_ns);
	util_pb_uint(&prof, 10, c->r.records ? atr_ticks_to_ns_u64(c->f, c->r.last_ts) : 0);
	util_pb_msg(&prof, 11, &pt);
	util_pb_uint(&prof, 12, 1); /* period: every allocation is recorded */
	util_pb_packed(&prof, 13, (const uint64_t[]){(uint64_t)comment}, 1);
	util_pb_uint(&prof, 14, (uint64_t)dflt);
	int rc = 0;
	if (s.nomem || prof.nomem || samples.nomem || s.maps.nomem || s.locs.nomem || s.fns.nomem)
		rc = ATR_E_NOMEM;
	else
		rc = gzip_out(out, prof.b.data, prof.b.len);
	util_buf_free(&prof.b);
	util_buf_free(&samples.b);
	util_buf_free(&s.maps.b);
	util_buf_free(&s.locs.b);
	util_buf_free(&s.fns.b);
	util_hmap_destroy(&s.loc_by_ip);
	util_hmap_destroy(&s.fn_by_key);
	util_hmap_destroy(&s.map_by_mod);
	util_str_free(&s.strs);
	return rc;
}
