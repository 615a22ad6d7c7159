/* an_libdw.c - see an_libdw.h. */
#define _GNU_SOURCE
#include "an_libdw.h"

#ifdef ATR_HAVE_LIBDW
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "util_msg.h"

/* libdw's soname: stable since elfutils 0.122 (2006) */
#define AN_LIBDW_SONAME "libdw.so.1"

struct an_dw an_dw;
Dwfl_Callbacks an_dw_offline;
static char *debuginfo_path = NULL; /* elfutils' default: /usr/lib/debug */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = -1;

static void load(void)
{
	void *h = dlopen(AN_LIBDW_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		util_err("cannot load %s (%s): frames are shown as addresses (install libdw1)",
			 AN_LIBDW_SONAME, dlerror());
		return;
	}
	struct an_dw t;
	const char *missing = NULL;
#define AN_DW_LOAD_(name)                                                                          \
	if (!(*(void **)&t.name = dlsym(h, #name)) && !missing)                                    \
		missing = #name;
	AN_DW_FUNCS(AN_DW_LOAD_)
#undef AN_DW_LOAD_
	if (missing) {
		util_err("%s lacks %s: frames are shown as addresses", AN_LIBDW_SONAME, missing);
		dlclose(h);
		return;
	}
	an_dw = t;
	an_dw_offline = (Dwfl_Callbacks){
	    .find_elf = t.dwfl_build_id_find_elf,
	    .find_debuginfo = t.dwfl_standard_find_debuginfo,
	    .section_address = t.dwfl_offline_section_address,
	    .debuginfo_path = &debuginfo_path,
	};
	loaded = 0;
}

int an_dw_load(void)
{
	pthread_once(&once, load);
	return loaded;
}
#endif
