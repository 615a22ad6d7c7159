/* an_libdw.h - elfutils libdw, loaded when the first symbol is wanted.
 *
 * Linking libdw makes every alloctrace command load it and its libraries
 * (libelf, liblzma, libbz2, libz): ~1.5-2.5 ms of each start on our VM
 * (bench/RESULTS.md, "Loading libdw when it is needed"), more than a
 * whole `info` of a small trace spends reading.  Only symbolization needs
 * it, so an_symbols.c calls it through this table, filled by dlopen on
 * first use.
 */
#ifndef AN_LIBDW_H
#define AN_LIBDW_H

#ifdef ATR_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

/* Every libdw function an_symbols.c calls. */
#define AN_DW_FUNCS(X)                                                                             \
	X(dwarf_attr)                                                                              \
	X(dwarf_attr_integrate)                                                                    \
	X(dwarf_child)                                                                             \
	X(dwarf_dieoffset)                                                                         \
	X(dwarf_filesrc)                                                                           \
	X(dwarf_formstring)                                                                        \
	X(dwarf_formudata)                                                                         \
	X(dwarf_getscopes_die)                                                                     \
	X(dwarf_getsrcfiles)                                                                       \
	X(dwarf_haschildren)                                                                       \
	X(dwarf_haspc)                                                                             \
	X(dwarf_offdie)                                                                            \
	X(dwarf_ranges)                                                                            \
	X(dwarf_siblingof)                                                                         \
	X(dwarf_tag)                                                                               \
	X(dwfl_begin)                                                                              \
	X(dwfl_build_id_find_elf)                                                                  \
	X(dwfl_end)                                                                                \
	X(dwfl_lineinfo)                                                                           \
	X(dwfl_module_addrdie)                                                                     \
	X(dwfl_module_addrname)                                                                    \
	X(dwfl_module_build_id)                                                                    \
	X(dwfl_module_getdwarf)                                                                    \
	X(dwfl_module_getsrc)                                                                      \
	X(dwfl_offline_section_address)                                                            \
	X(dwfl_report_begin)                                                                       \
	X(dwfl_report_elf)                                                                         \
	X(dwfl_report_end)                                                                         \
	X(dwfl_standard_find_debuginfo)

#define AN_DW_FIELD_(name) __typeof__(name) *name;
struct an_dw {
	AN_DW_FUNCS(AN_DW_FIELD_)
};
#undef AN_DW_FIELD_

extern struct an_dw an_dw;
/* For offline files (trace modules): libdw's build-id and debuginfo
 * finders, elfutils' default debuginfo path (/usr/lib/debug) */
extern Dwfl_Callbacks an_dw_offline;

/* 0 once an_dw is filled; -1 if libdw cannot be loaded (said once on
 * stderr: frames then stay addresses). */
int an_dw_load(void);

/* A libdw call through the table: DW(dwfl_begin)(&callbacks). */
#define DW(name) (an_dw.name)
#endif

#endif
