/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for sbx_probe_cache_match (a session reads root's probe
 * cache entry): an entry is taken only when it is the expected key followed
 * by one "written SECONDS" line, and everything else is refused with a
 * message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char key[] =
	"agent-sandbox probe cache 1\n"
	"uid 1001\n"
	"boot_id 36dd967a-6e17-43b0-ae8e-79d224ebdad0\n"
	"kernel 6.18.44\n"
	"kernel_version #1 SMP PREEMPT_DYNAMIC\n"
	"userns user:[4026531837]\n"
	"seccomp_mode 0\n"
	"sysctl user/max_user_namespaces=96549\n"
	"sysctl kernel/unprivileged_userns_clone=-\n"
	"namespaces user mount pid net ipc uts cgroup\n";

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_probe_cache: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct sbx_error err = { 0 };
	size_t klen = strlen(key);

	if (sbx_probe_cache_match(key, buf, size, "entry", &err) != 0) {
		must((err.code == ESTALE || err.code == EINVAL) && err.msg[0],
		     "rejection without a message");
		return 0;
	}
	/* Taken: exactly the key, "written ", digits, a newline. */
	must(size >= klen + 10 && !memcmp(buf, key, klen), "taken without the key");
	must(!memcmp(buf + klen, "written ", 8) && buf[size - 1] == '\n', "no written line");
	for (size_t i = klen + 8; i < size - 1; i++)
		must(buf[i] >= '0' && buf[i] <= '9', "not digits");
	return 0;
}
