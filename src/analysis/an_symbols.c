/* an_symbols.c - see an_symbols.h. */
#define _GNU_SOURCE
#include "an_symbols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util_hmap.h"

#include "an_libdw.h"
#ifdef ATR_HAVE_LIBIBERTY
#include <libiberty/demangle.h>
#endif

#define AN_MAX_INLINE 32

#ifdef ATR_HAVE_LIBDW
/* The functions of one compilation unit by address: libdw's
 * dwarf_getscopes walks the unit's DIE tree from its root on every call
 * (O(unit) per address, 723 s for 1e5 frames of a 2000-function unit);
 * this index is built once per unit and searched. */
struct fn_range {
	Dwarf_Addr lo, hi;
	Dwarf_Off die;
};

struct cu_index {
	struct fn_range *r;
	size_t n, cap;
};
#endif

struct sym_mod {
	int state; /* 0 not tried, 1 open, -1 nothing usable */
#ifdef ATR_HAVE_LIBDW
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct util_hmap cus; /* CU DIE offset -> index in cis */
	struct cu_index *cis;
	size_t ncis, capcis;
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
	enum an_names names;
	struct util_hmap names_cache; /* raw name pointer -> index in strs */
	struct util_hmap paths_cache; /* libdw file name pointer -> index */
	char **strs;		      /* names made here (demangled), owned */
	size_t nstrs, capstrs;
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

/* "a<b<c>, d>::f<int>(x<y>)" -> "a<>::f<>(x<>)"; operator<, <<, <=>, ->
 * and "(anonymous namespace)" are kept. */
void an_shorten_templates(char *name)
{
	char *w = name;
	int depth = 0;
	for (const char *r = name; *r;) {
		if (!strncmp(r, "operator", 8) && depth == 0) {
			const char *o = r + 8;
			size_t k = 8;
			if (!strncmp(o, "<<=", 3) || !strncmp(o, "<=>", 3) || !strncmp(o, ">>=", 3))
				k += 3;
			else if (!strncmp(o, "<<", 2) || !strncmp(o, ">>", 2) ||
				 !strncmp(o, "<=", 2) || !strncmp(o, ">=", 2) ||
				 !strncmp(o, "->", 2))
				k += 2;
			else if (*o == '<' || *o == '>')
				k += 1;
			memmove(w, r, k);
			w += k;
			r += k;
			continue;
		}
		if (*r == '<') {
			if (depth++ == 0)
				*w++ = '<';
			r++;
			continue;
		}
		if (*r == '>' && depth > 0) {
			if (--depth == 0)
				*w++ = '>';
			r++;
			continue;
		}
		if (depth == 0)
			*w++ = *r;
		r++;
	}
	*w = 0;
}

#ifdef ATR_HAVE_LIBDW
static long keep_str(struct an_symbols *s, char *str)
{
	if (s->nstrs == s->capstrs) {
		size_t nc = s->capstrs ? s->capstrs * 2 : 256;
		char **ns = realloc(s->strs, nc * sizeof(*ns));
		if (!ns) {
			free(str);
			return -1;
		}
		s->strs = ns;
		s->capstrs = nc;
	}
	s->strs[s->nstrs] = str;
	return (long)s->nstrs++;
}
#endif

void an_symbols_set_names(struct an_symbols *s, enum an_names names)
{
	s->names = names;
}

int an_names_parse(const char *s)
{
	return !strcmp(s, "demangled") ? AN_NAMES_DEMANGLED
	       : !strcmp(s, "raw")     ? AN_NAMES_RAW
	       : !strcmp(s, "short")   ? AN_NAMES_SHORT
				       : -1;
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
	for (size_t i = 0; i < s->nmods; i++) {
		struct sym_mod *sm = &s->mods[i];
		if (sm->dwfl)
			DW(dwfl_end)(sm->dwfl);
		for (size_t k = 0; k < sm->ncis; k++)
			free(sm->cis[k].r);
		free(sm->cis);
		util_hmap_destroy(&sm->cus);
	}
#endif
	for (size_t i = 0; i < s->nents; i++)
		free(s->ents[i].frames);
	free(s->ents);
	free(s->mods);
	for (size_t i = 0; i < s->nstrs; i++)
		free(s->strs[i]);
	free(s->strs);
	util_hmap_destroy(&s->names_cache);
	util_hmap_destroy(&s->paths_cache);
	util_hmap_destroy(&s->cache);
	free(s);
}

#ifdef ATR_HAVE_LIBDW
/* Report one file for module m; 1 if it is usable (build-id matches or
 * nothing to compare), 0 otherwise (and nothing is kept). */
static int try_file(struct sym_mod *sm, const struct atr_module *m, const char *file)
{
	if (access(file, R_OK) != 0 || an_dw_load() != 0)
		return 0;
	Dwfl *d = DW(dwfl_begin)(&an_dw_offline);
	if (!d)
		return 0;
	DW(dwfl_report_begin)(d);
	Dwfl_Module *dm = DW(dwfl_report_elf)(d, an_basename(m->path), file, -1, m->bias, true);
	DW(dwfl_report_end)(d, NULL, NULL);
	if (!dm) {
		DW(dwfl_end)(d);
		return 0;
	}
	if (m->build_id_len) {
		const unsigned char *bits;
		GElf_Addr va;
		int n = DW(dwfl_module_build_id)(dm, &bits, &va);
		if (n > 0 &&
		    ((unsigned)n != m->build_id_len || memcmp(bits, m->build_id, (size_t)n))) {
			DW(dwfl_end)(d); /* a different build of that file */
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

/* A name as the user asked for it: demangled (cached per string: libdw's
 * and libelf's strings stay put while the module is open), raw, or
 * demangled with template arguments elided. */
static const char *user_name(struct an_symbols *s, const char *raw)
{
	if (!raw)
		return NULL;
	const char *at = strchr(raw, '@'); /* an ELF symbol's version */
	if (!at && (s->names == AN_NAMES_RAW || raw[0] != '_' || raw[1] != 'Z'))
		return raw;
	uint64_t idx;
	if (util_hmap_lookup(&s->names_cache, (uint64_t)(uintptr_t)raw, &idx))
		return s->strs[idx];
	char *d = at ? strndup(raw, (size_t)(at - raw)) : NULL;
	if (at && !d)
		return raw;
#ifdef ATR_HAVE_LIBIBERTY
	if (s->names != AN_NAMES_RAW) {
		/* addr2line -C's flags */
		char *dm = cplus_demangle(d ? d : raw, DMGL_PARAMS | DMGL_ANSI);
		if (dm) {
			free(d);
			d = dm;
			if (s->names == AN_NAMES_SHORT)
				an_shorten_templates(d);
		}
	}
#endif
	if (!d)
		return raw;
	long k = keep_str(s, d);
	if (k < 0)
		return raw;
	util_hmap_insert(&s->names_cache, (uint64_t)(uintptr_t)raw, (uint64_t)k, NULL);
	return s->strs[k];
}

/* A source path as binutils prints it: a relative one joined to the
 * unit's DW_AT_comp_dir.  Cached per libdw string. */
static const char *full_path(struct an_symbols *s, const char *comp_dir, const char *file)
{
	if (!file || file[0] == '/' || !comp_dir || !comp_dir[0])
		return file;
	uint64_t idx;
	if (util_hmap_lookup(&s->paths_cache, (uint64_t)(uintptr_t)file, &idx))
		return s->strs[idx];
	char *p;
	if (asprintf(&p, "%s/%s", comp_dir, file) < 0)
		return file;
	long k = keep_str(s, p);
	if (k < 0)
		return file;
	util_hmap_insert(&s->paths_cache, (uint64_t)(uintptr_t)file, (uint64_t)k, NULL);
	return s->strs[k];
}

/* What addr2line prints for a DIE: the linkage name (following
 * DW_AT_abstract_origin and DW_AT_specification), else DW_AT_name. */
static const char *die_raw_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;
	if (DW(dwarf_attr_integrate)(die, DW_AT_linkage_name, &a) ||
	    DW(dwarf_attr_integrate)(die, DW_AT_MIPS_linkage_name, &a))
		n = DW(dwarf_formstring)(&a);
	if (!n && DW(dwarf_attr_integrate)(die, DW_AT_name, &a))
		n = DW(dwarf_formstring)(&a);
	return n;
}

static const char *call_file(Dwarf_Files *files, size_t nfiles, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	if (!files || !DW(dwarf_attr)(die, DW_AT_call_file, &a) ||
	    DW(dwarf_formudata)(&a, &idx) != 0 || idx >= nfiles)
		return NULL;
	return DW(dwarf_filesrc)(files, idx, NULL, NULL);
}

static unsigned call_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	if (!DW(dwarf_attr)(die, DW_AT_call_line, &a) || DW(dwarf_formudata)(&a, &v) != 0)
		return 0;
	return (unsigned)v;
}

/* Fill out[] (cap >= 2) for address a in an open module: the chain of
 * inlined functions from the innermost, each with its own file:line (the
 * line table's for the innermost, the call site for the others), then the
 * real function.  The same walk as elfutils' eu-addr2line -i: the DIE
 * containing a is found with dwarf_getscopes, its physical parents with
 * dwarf_getscopes_die (dwarf_getscopes itself continues into the abstract
 * origin's scopes after the first inlined level). */
static int add_range(struct cu_index *ci, Dwarf_Addr lo, Dwarf_Addr hi, Dwarf_Off die)
{
	if (ci->n == ci->cap) {
		size_t nc = ci->cap ? ci->cap * 2 : 64;
		struct fn_range *nr = realloc(ci->r, nc * sizeof(*nr));
		if (!nr)
			return -1;
		ci->r = nr;
		ci->cap = nc;
	}
	ci->r[ci->n++] = (struct fn_range){lo, hi, die};
	return 0;
}

/* Every DW_TAG_subprogram with code under parent (namespaces, classes and
 * functions nest them), each of its ranges (hot and cold parts). */
static int index_dies(struct cu_index *ci, Dwarf_Die *parent, unsigned depth)
{
	Dwarf_Die c;
	if (depth > 64 || DW(dwarf_child)(parent, &c) != 0)
		return 0;
	do {
		int tag = DW(dwarf_tag)(&c);
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = DW(dwarf_ranges)(&c, off, &base, &lo, &hi)) > 0)
				if (hi > lo && add_range(ci, lo, hi, DW(dwarf_dieoffset)(&c)) < 0)
					return -1;
		}
		/* code-less scopes and functions may hold more functions */
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_namespace ||
		     tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		     tag == DW_TAG_union_type || tag == DW_TAG_lexical_block) &&
		    DW(dwarf_haschildren)(&c) && index_dies(ci, &c, depth + 1) < 0)
			return -1;
	} while (DW(dwarf_siblingof)(&c, &c) == 0);
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct cu_index *cu_index_of(struct sym_mod *sm, Dwarf_Die *cu)
{
	uint64_t idx, key = DW(dwarf_dieoffset)(cu);
	if (util_hmap_lookup(&sm->cus, key, &idx))
		return &sm->cis[idx];
	if (sm->ncis == sm->capcis) {
		size_t nc = sm->capcis ? sm->capcis * 2 : 16;
		struct cu_index *n = realloc(sm->cis, nc * sizeof(*n));
		if (!n)
			return NULL;
		sm->cis = n;
		sm->capcis = nc;
	}
	struct cu_index *ci = &sm->cis[sm->ncis];
	memset(ci, 0, sizeof(*ci));
	if (index_dies(ci, cu, 0) < 0 || util_hmap_insert(&sm->cus, key, sm->ncis, NULL) < 0) {
		free(ci->r);
		return NULL;
	}
	qsort(ci->r, ci->n, sizeof(*ci->r), cmp_range);
	sm->ncis++;
	return ci;
}

/* The function DIE whose code holds pc: the innermost of the ranges that
 * contain it (a nested function's range lies inside its parent's). */
static int find_function(struct sym_mod *sm, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out)
{
	struct cu_index *ci = cu_index_of(sm, cu);
	if (!ci || !ci->n)
		return -1;
	size_t lo = 0, hi = ci->n; /* first range with lo > pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ci->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < 64; k++)
		if (pc < ci->r[i].hi) {
			Dwarf_Addr bias;
			Dwarf *dw = DW(dwfl_module_getdwarf)(sm->mod, &bias);
			return dw && DW(dwarf_offdie)(dw, ci->r[i].die, out) ? 0 : -1;
		}
	return -1;
}

/* The DIEs that hold pc from the function down, innermost first into
 * out[]: the function, then each DW_TAG_inlined_subroutine nested in it
 * (through lexical blocks).  Returns the count (>= 1). */
static int inline_chain(Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die *out, int cap)
{
	Dwarf_Die tmp[AN_MAX_INLINE + 1];
	int n = 0;
	tmp[n++] = *fn;
	Dwarf_Die cur = *fn;
	for (unsigned depth = 0; depth < 256 && n < AN_MAX_INLINE + 1; depth++) {
		Dwarf_Die c;
		int found = 0;
		if (DW(dwarf_child)(&cur, &c) == 0)
			do {
				int tag = DW(dwarf_tag)(&c);
				if ((tag == DW_TAG_inlined_subroutine ||
				     tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
				     tag == DW_TAG_catch_block) &&
				    DW(dwarf_haspc)(&c, pc) > 0) {
					cur = c;
					if (tag == DW_TAG_inlined_subroutine)
						tmp[n++] = c;
					found = 1;
					break;
				}
			} while (DW(dwarf_siblingof)(&c, &c) == 0);
		if (!found)
			break;
	}
	int k = 0;
	for (int i = n; i-- > 0 && k < cap;)
		out[k++] = tmp[i];
	return k;
}

/* Fill out[] (cap >= 2) for address a in an open module: the chain of
 * inlined functions from the innermost, each with its own file:line (the
 * line table's for the innermost, the call site for the others), then the
 * real function, as `addr2line -f -i` prints them. */
static unsigned resolve_dw(struct an_symbols *s, struct sym_mod *sm, Dwarf_Addr a,
			   struct an_frame *out, unsigned cap, const struct an_frame *base)
{
	unsigned n = 0;
	const char *file = NULL;
	int line = 0;
	Dwfl_Line *dl = DW(dwfl_module_getsrc)(sm->mod, a);
	if (dl)
		file = DW(dwfl_lineinfo)(dl, NULL, &line, NULL, NULL, NULL);
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = DW(dwfl_module_addrdie)(sm->mod, a, &bias);
	Dwarf_Die chain[AN_MAX_INLINE + 1], fn;
	int ns = 0;
	if (cu && find_function(sm, cu, a - bias, &fn) == 0)
		ns = inline_chain(&fn, a - bias, chain, AN_MAX_INLINE + 1);
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	Dwarf_Attribute cda;
	const char *comp_dir =
	    cu ? DW(dwarf_formstring)(DW(dwarf_attr)(cu, DW_AT_comp_dir, &cda)) : NULL;
	file = full_path(s, comp_dir, file);
	if (ns > 0 && DW(dwarf_getsrcfiles)(cu, &files, &nfiles) != 0)
		files = NULL;
	for (int i = 0; i < ns && n + 1 < cap; i++) {
		struct an_frame *fr = &out[n++];
		*fr = *base;
		fr->file = file;
		fr->line = line > 0 ? (unsigned)line : 0;
		/* binutils takes a DIE's linkage name, else its name, and the
		 * ELF symbol only where DWARF has nothing */
		const char *nm = die_raw_name(&chain[i]);
		if (DW(dwarf_tag)(&chain[i]) == DW_TAG_subprogram) {
			fr->function = user_name(s, nm ? nm : DW(dwfl_module_addrname)(sm->mod, a));
			break;
		}
		fr->function = user_name(s, nm);
		fr->inlined = 1;
		/* the caller's location is the call site */
		file = full_path(s, comp_dir, call_file(files, nfiles, &chain[i]));
		line = (int)call_line(&chain[i]);
	}
	if (n == 0) {
		out[0] = *base;
		out[0].function = user_name(s, DW(dwfl_module_addrname)(sm->mod, a));
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
		n = resolve_dw(s, sm, (Dwarf_Addr)(ip - 1), tmp, AN_MAX_INLINE + 1, &base);
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
