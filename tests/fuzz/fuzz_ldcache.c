/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for sbx_ldcache_parse: every string handed to the
 * callback lies inside the buffer and is NUL-terminated there, a refusal
 * is -EINVAL with a message and comes before any callback.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	const uint8_t *buf;
	size_t len, n;
};

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_ldcache: %s\n", what);
		abort();
	}
}

static void inside(const struct seen *s, const char *str, const char *what)
{
	const uint8_t *p = (const uint8_t *)str;

	must(p >= s->buf && p < s->buf + s->len, what);
	must(memchr(p, '\0', (size_t)(s->buf + s->len - p)) != NULL, what);
}

static int cb(void *ctx, const char *soname, const char *path, uint32_t flags)
{
	struct seen *s = ctx;

	(void)flags;
	inside(s, soname, "soname outside the buffer or unterminated");
	inside(s, path, "path outside the buffer or unterminated");
	s->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = { data, size, 0 };
	struct sbx_error err;
	int r;

	memset(&err, 0, sizeof(err));
	r = sbx_ldcache_parse(data, size, cb, &s, &err);
	if (r != 0) {
		must(r == -EINVAL && err.code == EINVAL && err.msg[0], "refusal without EINVAL");
		must(s.n == 0, "callbacks before a refusal");
		return 0;
	}
	/* Each entry is 24 bytes after a 48-byte header. */
	must(s.n <= size / 24, "more entries than fit");
	return 0;
}
