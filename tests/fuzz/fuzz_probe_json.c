/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for sbx_probe_from_json (the doctor reads what a process
 * of the agent's uid printed): parse, re-serialise, re-parse, compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_probe_json: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_probe a, b;
	struct sbx_error err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (sbx_probe_from_json((const char *)data, size, &a, &err) != 0) {
		must(err.code == 22 && err.msg[0], "rejection without a message");
		return 0;
	}
	must(a.landlock_abi >= 0 && a.landlock_errata >= 0, "negative number accepted");
	must((a.landlock_abi > 0) == !a.landlock_why[0] || a.landlock_abi == 0,
	     "a why next to a working Landlock");
	f = open_memstream(&buf, &len);
	must(f != NULL, "open_memstream");
	must(sbx_probe_to_json(&a, f) == 0, "to_json");
	fclose(f);
	must(sbx_probe_from_json(buf, len, &b, &err) == 0, "re-parse of our own output");
	must(!strcmp(a.kernel, b.kernel), "kernel");
	must(a.landlock_abi == b.landlock_abi && a.landlock_errata == b.landlock_errata, "abi");
	/* An empty why is written as "unavailable (cause unknown)". */
	must(!strcmp(a.landlock_why, b.landlock_why) || (!a.landlock_why[0] && !a.landlock_abi),
	     "landlock_why");
	must(!strcmp(a.userns_why, b.userns_why), "userns_why");
	must(a.seccomp == b.seccomp && a.seccomp_kill_process == b.seccomp_kill_process &&
	     a.userns == b.userns && a.mountns == b.mountns && a.pidns == b.pidns &&
	     a.netns == b.netns && a.ipcns == b.ipcns && a.utsns == b.utsns &&
	     a.cgroupns == b.cgroupns && a.cgroup2 == b.cgroup2 &&
	     a.cgroup2_delegated == b.cgroup2_delegated && a.cgroup2_limits == b.cgroup2_limits &&
	     a.mount_setattr == b.mount_setattr,
	     "flags");
	free(buf);
	return 0;
}
