/* an_symbols.c - see an_symbols.h. */
#define _GNU_SOURCE
#include "an_symbols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util_hmap.h"

#ifdef ATR_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#endif

#define AN_MAX_INLINE 32

struct sym_mod {
	int state; /* 0 not tried, 1 open, -1 nothing usable */
#ifdef ATR_HAVE_LIBDW
	Dwfl *dwfl;
	Dwfl_Module *mod;
#endif
};

struct sym_ent {
	unsigned n;
	struct an_frame *frames;
};

struct an_symbols {
	const atr_file *f;
	struct sym_mod *mods;
	size_t nmods;
	struct util_hmap cache; /* key -> index in ents */
	struct sym_ent *ents;
	size_t nents, capents;
	struct an_frame fallback;
};

const char *an_basename(const char *path)
{
	if (!path)
		return NULL;
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const char *an_frame_name(const struct an_frame *fr, char *buf, unsigned len)
{
	if (fr->function)
		return fr->function;
	if (fr->module)
		snprintf(buf, len, "%s+0x%llx", an_basename(fr->module),
			 (unsigned long long)fr->offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)fr->ip);
	return buf;
}

struct an_symbols *an_symbols_new(const atr_file *f)
{
	struct an_symbols *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->f = f;
	s->nmods = atr_module_count(f);
	s->mods = calloc(s->nmods ? s->nmods : 1, sizeof(*s->mods));
	if (!s->mods) {
		free(s);
		return NULL;
	}
	return s;
}

void an_symbols_free(struct an_symbols *s)
{
	if (!s)
		return;
#ifdef ATR_HAVE_LIBDW
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
#endif
	for (size_t i = 0; i < s->nents; i++)
		free(s->ents[i].frames);
	free(s->ents);
	free(s->mods);
	util_hmap_destroy(&s->cache);
	free(s);
}

#ifdef ATR_HAVE_LIBDW
static char *debuginfo_path = NULL; /* elfutils' default: /usr/lib/debug */

static const Dwfl_Callbacks dw_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* Report one file for module m; 1 if it is usable (build-id matches or
 * nothing to compare), 0 otherwise (and nothing is kept). */
static int try_file(struct sym_mod *sm, const struct atr_module *m, const char *file)
{
	if (access(file, R_OK) != 0)
		return 0;
	Dwfl *d = dwfl_begin(&dw_callbacks);
	if (!d)
		return 0;
	dwfl_report_begin(d);
	Dwfl_Module *dm = dwfl_report_elf(d, an_basename(m->path), file, -1, m->bias, true);
	dwfl_report_end(d, NULL, NULL);
	if (!dm) {
		dwfl_end(d);
		return 0;
	}
	if (m->build_id_len) {
		const unsigned char *bits;
		GElf_Addr va;
		int n = dwfl_module_build_id(dm, &bits, &va);
		if (n > 0 && ((unsigned)n != m->build_id_len || memcmp(bits, m->build_id, (size_t)n))) {
			dwfl_end(d); /* a different build of that file */
			return 0;
		}
	}
	sm->dwfl = d;
	sm->mod = dm;
	return 1;
}

static struct sym_mod *open_mod(struct an_symbols *s, long mi)
{
	struct sym_mod *sm = &s->mods[mi];
	if (sm->state)
		return sm->state > 0 ? sm : NULL;
	sm->state = -1;
	const struct atr_module *m = atr_module_get(s->f, (size_t)mi);
	if (!m)
		return NULL;
	int ok = m->path && m->path[0] && try_file(sm, m, m->path);
	if (!ok && m->build_id_len) {
		char p[64 + 2 * ATR_MOD_BUILD_ID_MAX];
		int k = snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%02x/", m->build_id[0]);
		for (uint32_t i = 1; i < m->build_id_len && k + 3 < (int)sizeof(p); i++)
			k += snprintf(p + k, sizeof(p) - (size_t)k, "%02x", m->build_id[i]);
		snprintf(p + k, sizeof(p) - (size_t)k, ".debug");
		ok = try_file(sm, m, p);
	}
	if (ok)
		sm->state = 1;
	return ok ? sm : NULL;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;
	if (!dwarf_attr(die, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) != 0)
		return NULL;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static unsigned call_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	if (!dwarf_attr(die, DW_AT_call_line, &a) || dwarf_formudata(&a, &v) != 0)
		return 0;
	return (unsigned)v;
}

/* Fill out[] (cap >= 1) for address a in an open module. */
static unsigned resolve_dw(struct sym_mod *sm, Dwarf_Addr a, struct an_frame *out, unsigned cap,
			   const struct an_frame *base)
{
	unsigned n = 0;
	const char *file = NULL;
	int line = 0;
	Dwfl_Line *dl = dwfl_module_getsrc(sm->mod, a);
	if (dl)
		file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
	const char *sym = dwfl_module_addrname(sm->mod, a);
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(sm->mod, a, &bias);
	if (cu) {
		Dwarf_Die *scopes = NULL;
		int ns = dwarf_getscopes(cu, a - bias, &scopes);
		for (int i = 0; i < ns && n < cap; i++) {
			int tag = dwarf_tag(&scopes[i]);
			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
				continue;
			struct an_frame *fr = &out[n++];
			*fr = *base;
			fr->file = file;
			fr->line = line > 0 ? (unsigned)line : 0;
			if (tag == DW_TAG_subprogram) {
				const char *nm = die_name(&scopes[i]);
				fr->function = nm ? nm : sym;
				break;
			}
			fr->function = die_name(&scopes[i]);
			fr->inlined = 1;
			/* the caller's location is the call site */
			file = call_file(cu, &scopes[i]);
			line = (int)call_line(&scopes[i]);
		}
		free(scopes);
		/* inlined frames without their caller: the last one is real */
		if (n && out[n - 1].inlined) {
			if (n < cap) {
				struct an_frame *fr = &out[n++];
				*fr = *base;
				fr->function = sym;
				fr->file = file;
				fr->line = line > 0 ? (unsigned)line : 0;
			} else {
				out[n - 1].inlined = 0;
			}
		}
	}
	if (n == 0) {
		out[0] = *base;
		out[0].function = sym;
		out[0].file = file;
		out[0].line = line > 0 ? (unsigned)line : 0;
		n = 1;
	}
	return n;
}
#endif

unsigned an_symbols_resolve(struct an_symbols *s, uint64_t ip, uint32_t stack_id,
			    const struct an_frame **frames)
{
	long mi = atr_module_find(s->f, ip, stack_id);
	uint64_t key = ip ^ ((uint64_t)(mi + 1) << 48);
	uint64_t idx;
	if (util_hmap_lookup(&s->cache, key, &idx)) {
		*frames = s->ents[idx].frames;
		return s->ents[idx].n;
	}
	struct an_frame base;
	memset(&base, 0, sizeof(base));
	base.ip = ip;
	const struct atr_module *m = mi >= 0 ? atr_module_get(s->f, (size_t)mi) : NULL;
	if (m) {
		base.module = m->path;
		base.offset = ip - m->bias;
	}
	struct an_frame tmp[AN_MAX_INLINE + 1];
	unsigned n = 0;
#ifdef ATR_HAVE_LIBDW
	struct sym_mod *sm = mi >= 0 ? open_mod(s, mi) : NULL;
	if (sm)
		n = resolve_dw(sm, (Dwarf_Addr)(ip - 1), tmp, AN_MAX_INLINE + 1, &base);
#endif
	if (n == 0) {
		tmp[0] = base;
		n = 1;
	}
	struct an_frame *copy = malloc(n * sizeof(*copy));
	if (s->nents == s->capents) {
		size_t nc = s->capents ? s->capents * 2 : 256;
		struct sym_ent *ne = realloc(s->ents, nc * sizeof(*ne));
		if (ne) {
			s->ents = ne;
			s->capents = nc;
		}
	}
	if (!copy || s->nents == s->capents ||
	    util_hmap_insert(&s->cache, key, s->nents, NULL) < 0) {
		free(copy);
		s->fallback = base;
		*frames = &s->fallback;
		return 1;
	}
	memcpy(copy, tmp, n * sizeof(*copy));
	s->ents[s->nents].n = n;
	s->ents[s->nents].frames = copy;
	s->nents++;
	*frames = copy;
	return n;
}
