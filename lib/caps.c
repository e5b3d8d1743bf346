/* SPDX-License-Identifier: BSD-3-Clause */
/* Drop every capability and prove none is left (docs/design.md section 4.4). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/securebits.h>

#include "internal.h"

/* KEEP_CAPS itself stays off (locked off): a later setuid() must not keep
 * anything. NOROOT stops uid 0 (or a setuid-root file) regaining caps at
 * exec; NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE close the other two ways
 * sets can be refilled. Each with its lock so nothing can undo them. */
#define SBX_SECUREBITS                                                   \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |  \
	 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |        \
	 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

/* The kernel may know capabilities our headers do not: ask it. */
static int cap_last(void)
{
	char *buf = NULL;
	uint64_t v;
	int last = CAP_LAST_CAP;

	if (sbx_read_file("/proc/sys/kernel/cap_last_cap", 32, &buf, NULL, NULL) == 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (sbx_parse_u64(buf, false, 0, 255, &v) == 0)
			last = (int)v;
		free(buf);
	}
	return last;
}

int sbx_caps_drop_all(struct sbx_error *err)
{
	/* capset(2) itself, version 3 (64 bits in two words): all three
	 * sets zero. No library is needed for one system call. */
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct empty[_LINUX_CAPABILITY_U32S_3];
	int last = cap_last(), cap, bits;

	/* Securebits need CAP_SETPCAP, so they go first. */
	bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits < 0)
		return sbx_error_set(err, errno, "prctl(PR_GET_SECUREBITS): %s",
				     strerror(errno));
	if (((unsigned)bits & SBX_SECUREBITS) != SBX_SECUREBITS &&
	    prctl(PR_SET_SECUREBITS, (unsigned long)((unsigned)bits | SBX_SECUREBITS),
		  0, 0, 0) != 0)
		return sbx_error_set(err, errno, "prctl(PR_SET_SECUREBITS, 0x%x): %s",
				     (unsigned)bits | SBX_SECUREBITS, strerror(errno));
	/* Bounding set: also needs CAP_SETPCAP. One call per capability
	 * where the drop succeeds (dropping one already gone is no error);
	 * a refused drop is an error only for a capability still there. */
	for (cap = 0; cap <= last; cap++) {
		int e;

		if (prctl(PR_CAPBSET_DROP, (unsigned long)cap, 0, 0, 0) == 0)
			continue;
		e = errno;
		if (prctl(PR_CAPBSET_READ, (unsigned long)cap, 0, 0, 0) == 0)
			continue;
		return sbx_error_set(err, e, "prctl(PR_CAPBSET_DROP, %d): %s", cap, strerror(e));
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
		return sbx_error_set(err, errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL): %s",
				     strerror(errno));
	memset(empty, 0, sizeof(empty));
	if (syscall(SYS_capset, &hdr, empty) != 0)
		return sbx_error_set(err, errno,
				     "capset(inheritable, permitted, effective = 0): %s",
				     strerror(errno));
	return 0;
}

int sbx_caps_verify_none(struct sbx_error *err)
{
	static const char *const fields[] = { "CapInh", "CapPrm", "CapEff",
					      "CapBnd", "CapAmb" };
	char left[256] = "";
	size_t used = 0, i;
	unsigned found = 0;
	char *buf = NULL;
	int bits, r;

	r = sbx_read_file("/proc/self/status", 64 * 1024, &buf, NULL, err);
	if (r < 0)
		return r;
	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		size_t flen = strlen(fields[i]);
		const char *line = buf;
		const char *val = NULL;

		while (line && *line) {
			if (strncmp(line, fields[i], flen) == 0 && line[flen] == ':') {
				val = line + flen + 1;
				break;
			}
			line = strchr(line, '\n');
			if (line)
				line++;
		}
		if (!val) {
			r = sbx_error_set(err, ENOENT, "/proc/self/status: no %s line",
					  fields[i]);
			goto out;
		}
		val += strspn(val, " \t");
		found++;
		if (strspn(val, "0") != strcspn(val, "\n") || strcspn(val, "\n") == 0) {
			int n = snprintf(left + used, sizeof(left) - used, "%s%s=%.*s",
					 used ? " " : "", fields[i],
					 (int)strcspn(val, "\n"), val);

			if (n > 0 && (size_t)n < sizeof(left) - used)
				used += (size_t)n;
		}
	}
	if (used) {
		r = sbx_error_set(err, EPERM, "capabilities left: %s", left);
		goto out;
	}
	bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits < 0) {
		r = sbx_error_set(err, errno, "prctl(PR_GET_SECUREBITS): %s",
				  strerror(errno));
		goto out;
	}
	if (((unsigned)bits & SBX_SECUREBITS) != SBX_SECUREBITS ||
	    ((unsigned)bits & SECBIT_KEEP_CAPS)) {
		r = sbx_error_set(err, EPERM, "securebits 0x%x: want 0x%x locked, KEEP_CAPS off",
				  (unsigned)bits, SBX_SECUREBITS);
		goto out;
	}
	r = 0;
out:
	free(buf);
	return r;
}
