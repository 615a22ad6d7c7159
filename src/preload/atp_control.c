/* atp_control.c - the control API (include/alloctrace.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "atp_internal.h"

#define EXPORT __attribute__((visibility("default")))

static int ready(void)
{
	if (atomic_load(&g.state) == ATP_UNINIT && !g.deferred)
		atp_init();
	return atomic_load(&g.state) == ATP_READY && !atomic_load(&g.failed);
}

static void control(unsigned ctl)
{
	struct atp_thread *t = &atp_tls;
	/* called from inside a hook of this thread (a signal handler, or
	 * `record -p` detaching): its half-written record owns the block */
	if (t->guard)
		return;
	t->guard++;
	atp_write_meta(t, ATR_T_CONTROL, ctl, NULL, 0);
	t->guard--;
}

EXPORT int alloctrace_start_impl(void)
{
	if (!ready())
		return -1;
	int e = errno;
	g.recording = 1;
	atp_hdr_clear_status(ATR_STATUS_STOPPED);
	control(ATR_CTL_START);
	errno = e;
	return 0;
}

EXPORT int alloctrace_stop_impl(void)
{
	if (!ready())
		return -1;
	int e = errno;
	control(ATR_CTL_STOP);
	g.recording = 0;
	atp_hdr_set_status(ATR_STATUS_STOPPED);
	if (g.net && g.attach) {
		/* `record -p` detaching: the stream ends here, the spool goes */
		static uint8_t *blocks[ATP_MAX_SLOTS + ATP_MAX_SPARE];
		struct atp_thread *t = &atp_tls;
		t->guard++;
		atp_net_stop(blocks, atp_staging_blocks(blocks, ATP_MAX_SLOTS + ATP_MAX_SPARE));
		t->guard--;
	}
	errno = e;
	return 0;
}

EXPORT int alloctrace_pause_impl(void)
{
	if (!ready())
		return -1;
	int e = errno;
	control(ATR_CTL_PAUSE);
	g.recording = 0;
	errno = e;
	return 0;
}

EXPORT int alloctrace_resume_impl(void)
{
	if (!ready())
		return -1;
	int e = errno;
	g.recording = 1;
	control(ATR_CTL_RESUME);
	errno = e;
	return 0;
}

/* Records are in the file as soon as they are written (shared mapping), so
 * there is nothing to flush: this returns how many there are. */
EXPORT uint64_t alloctrace_sync_impl(void)
{
	if (!ready())
		return 0;
	return atp_record_count();
}

EXPORT int alloctrace_marker_impl(const char *label)
{
	if (!ready() || !g.recording)
		return -1;
	int e = errno;
	size_t len = label ? strnlen(label, ATR_MARKER_MAX) : 0;
	struct atp_thread *t = &atp_tls;
	t->guard++;
	int rc = atp_write_meta(t, ATR_T_MARKER, 0, label, (uint32_t)len);
	t->guard--;
	errno = e;
	return rc;
}

/* `alloctrace record -p`: called in the target (ptrace remote call) after
 * the library was dlopen'ed.  Creates dir/<pid>.atr marked ATTACHED and
 * starts recording.  real[0..ATP_ATTACH_NREAL-1], in ATR_CALLS order, then
 * ATR_XCALLS order, then mmap64: on input,
 * a non-zero entry is the function our hook must call instead of what
 * dlsym(RTLD_DEFAULT) finds (record resolved a canonical PLT stub of the
 * program, docs/ATTACH.md); on output, the functions our hooks call
 * (record patches only GOT entries bound to them).  settings: the
 * ALLOCTRACE_* settings of `record` as "NAME=VALUE" strings, each ended by
 * a NUL, the block by an empty one (NULL: none); the target's environment
 * is not read.  The calls only reach us once record patched the GOTs.  0
 * or -errno. */
EXPORT int alloctrace_attach_impl(const char *dir, uint64_t ticks_per_sec, void **real,
				  const char *settings)
{
	if (!g.deferred || atomic_load(&g.state) != ATP_UNINIT)
		return -EBUSY;
	if (!dir || dir[0] != '/' || strlen(dir) >= sizeof g.dir)
		return -EINVAL;
	size_t slen = 0;
	while (settings && settings[slen]) {
		slen += strlen(settings + slen) + 1;
		if (slen >= sizeof g.attach_env)
			return -E2BIG;
	}
	int e = errno;
	g.attach = 1;
	memcpy(g.attach_env, settings ? settings : "", slen);
	g.attach_env[slen] = 0;
	atp_strlcpy(g.dir, dir, sizeof g.dir);
	g.ticks_hint = ticks_per_sec;
	if (real)
		memcpy(g.attach_real, real, sizeof g.attach_real);
	atp_init();
	int rc = -EIO;
	if (atomic_load(&g.state) == ATP_READY) {
		atp_hdr_set_status(ATR_STATUS_ATTACHED);
		/* what the preload constructor does: libunwind for --stacks */
		atp_stacks_load();
		if (real) {
			void *const *r = (void *const *)&g.real;
			memcpy(real, r, ATR_NCALLS * sizeof(void *));
			memcpy(real + ATR_NCALLS, r + ATR_NCALLS + 1, ATR_NXCALLS * sizeof(void *));
			real[ATP_ATTACH_NREAL - 1] = (void *)g.real.mmap; /* mmap64 */
		}
		rc = 0;
	}
	errno = e;
	return rc;
}
