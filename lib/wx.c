/* SPDX-License-Identifier: BSD-3-Clause */
/* W^X under the command gate: the kernel's MDWE where it has it, and what the report says holds. */
#include <errno.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>

#include "internal.h"

/*
 * docs/design.md section 6. Called in the worker before the filter, which
 * allows personality() only as a query or PER_LINUX.
 *
 * READ_IMPLIES_EXEC makes the kernel add PROT_EXEC to every readable
 * mapping after the filter has read the arguments: an anonymous
 * PROT_READ|PROT_WRITE mapping would come out writable and executable
 * past the seccomp rules. personality is inherited across fork and exec
 * (x86_64 drops the flag when it runs a 64-bit ELF, arm64 keeps it), so
 * whoever started agent-shell (su, runuser, a caller of the library) could
 * hand it in. Only that flag is cleared: the others are the caller's
 * business and the filter keeps the program from changing any.
 *
 * PR_MDWE_REFUSE_EXEC_GAIN without PR_MDWE_NO_INHERIT: every process the
 * program starts keeps it, and nothing can clear it (prctl answers EPERM).
 */
int sbx_wx_apply(enum sbx_wx_mech m, struct sbx_error *err)
{
	int cur;

	if (m == SBX_WX_NONE)
		return 0;
	cur = personality(0xffffffff);
	if (cur < 0)
		return sbx_error_set(err, errno, "personality(query): %s", strerror(errno));
	if ((cur & READ_IMPLIES_EXEC) &&
	    personality((unsigned long)(cur & ~READ_IMPLIES_EXEC)) < 0)
		return sbx_error_set(err, errno, "personality(clear READ_IMPLIES_EXEC): %s",
				     strerror(errno));
	if (m == SBX_WX_MDWE && prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0)
		return sbx_error_set(err, errno, "prctl(PR_SET_MDWE, REFUSE_EXEC_GAIN): %s",
				     strerror(errno));
	return 0;
}

/* The memory_wx entry's detail: what holds, by which layer. */
const char *sbx_wx_describe(enum sbx_wx_mech m)
{
	switch (m) {
	case SBX_WX_MDWE:
		return "W^X: PR_SET_MDWE refuses memory writable and executable and any gain of "
		       "exec; seccomp refuses executable anonymous or shared mappings and SHM_EXEC";
	case SBX_WX_SECCOMP:
		return "W^X by seccomp alone (no PR_SET_MDWE: Linux < 6.3): no mapping writable and "
		       "executable, none of anonymous or shared memory executable, no mprotect to "
		       "PROT_EXEC, no SHM_EXEC";
	case SBX_WX_NONE:
		break;
	}
	return SBX_WX_JIT_ALLOWED;
}
