/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for sbx_mountinfo_next: every call moves forward and
 * stays inside the buffer, the walk ends at the buffer's end, and an
 * entry it accepts has absolute, NUL-terminated root and mount paths.
 * The same table through sbx_secret_mounts_shown: it ends (parents may
 * loop), and every path it hands over is absolute.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_mountinfo: %s\n", what);
		abort();
	}
}

static int shown(void *ctx, size_t k, const char *path, int mnt_id)
{
	(void)ctx;
	(void)mnt_id;
	must(k == 0 && path[0] == '/', "a secret's path");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sbx_secret_places sp = {
		.n = 1, .s = { { .major = 8, .minor = 1, .own_id = 1 } }, .text = "/srv/keys",
	};
	char why[200] = "";
	static struct sbx_mount_entry m;
	const char *buf = (const char *)data, *pos = buf, *end = buf + size;
	int r;

	for (;;) {
		const char *before = pos;

		r = sbx_mountinfo_next(&pos, end, &m);
		if (r == 0)
			break;
		must(pos > before && pos <= end, "moves forward, inside the buffer");
		if (r < 0)
			continue;
		must(r == 1, "result");
		must(m.root[0] == '/' && m.point[0] == '/', "absolute");
		must(strlen(m.root) < sizeof(m.root) && strlen(m.point) < sizeof(m.point),
		     "bounded");
		must(m.id >= 0 && m.parent >= 0, "ids");
	}
	must(pos == end, "the walk ends at the end");
	r = sbx_secret_mounts_shown(buf, size, &sp, shown, NULL, why, sizeof(why));
	must(r == 0 || r == -EINVAL || r == -ENAMETOOLONG || r == -ENOMEM, "result of shown");
	return 0;
}
