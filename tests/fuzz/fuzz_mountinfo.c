/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for sbx_mountinfo_next: every call moves forward and
 * stays inside the buffer, the walk ends at the buffer's end, and an
 * entry it accepts has absolute, NUL-terminated root and mount paths.
 */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
	return 0;
}
